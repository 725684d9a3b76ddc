"""A small LRU of query vectors: an agent asks the same few questions again and again (a run's
retries, the same recall at every turn), and a hit costs microseconds where the model costs
milliseconds.

Keyed by the embedder's model (with its runtime) and the exact text: a deterministic model
gives a text one vector, so an entry never goes stale; it only ages out. Bounded by entries,
each a compact array of doubles (~3 KB for 384 dimensions: 1,024 entries are ~3 MB). One per
process, shared by its threads.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Hashable, Sequence


class QueryCache:
    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[Hashable, array] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> list[float] | None:
        """The vector kept for `key` (a fresh list: the caller may change it), or None."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
        return found.tolist()

    def put(self, key: Hashable, vector: Sequence[float]) -> None:
        if self.max_entries <= 0:
            return
        kept = array("d", vector)
        with self._lock:
            self._entries[key] = kept
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0
