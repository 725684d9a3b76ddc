"""Python's cyclic garbage collector, tuned for a process that serves requests.

Everything loaded at start-up (Django, the apps, the model's session) lives as long as the
process: `gc.freeze()` keeps it out of the collector's passes, which otherwise rescan it and
stall a request for 100-300 ms now and then (bench/audit_overhead.py measured those pauses as
the audit stream's main cost). A request then allocates tens of thousands of short-lived
containers (querysets, template nodes, rows): with the default thresholds (700, 10, 10) a
console page ran several collections, and one in twenty paid a full one. Raising them makes a
collection rare and a full one rarer; the memory a request leaves is freed by reference
counting all the same. bench/console_pages.py, the review queue at 100,000 facts: p95 282 ms
with the defaults, 184 frozen, 151 frozen with these thresholds (p50 136, 134, 117).
"""

from __future__ import annotations

import gc

THRESHOLDS = (50_000, 20, 100)


def tune_for_serving() -> None:
    """Freeze what is loaded now and raise the collection thresholds: call once, after the
    app is loaded, in each process that serves requests."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
