"""Kombu's Redis transport with one window closed, for the embedded broker (`kindmem+socket://`).

Kombu's Redis transport takes a message with BRPOP, which removes it from the queue, and only
then records it as unacknowledged (HSET in the `unacked` hash). A worker SIGKILLed between the
two loses that message for good (bench/broker_throughput.py: one task in 11 kill rounds). Here
the message is taken with BLMOVE instead, atomically from the queue into an in-flight list
(`INFLIGHT_KEY`), and leaves that list only once it is in the unacked hash. A message is
therefore always in the queue, in flight or unacked until it is acknowledged, and what a dead
worker held is put back from both by `config.broker.broker_restore_unacked`.

BLMOVE takes one source list, so this applies when the worker reads one list: one queue, with
priorities off (`priority_steps` [0], kindmem sets no priority). Otherwise, it is Kombu's BRPOP.
"""

from __future__ import annotations

from time import monotonic
from typing import Any

from kombu.transport import redis
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import loads

# One list for the whole broker: the embedded broker has one consumer, the worker of
# `kindmem run` (with prefetch, it may hold a few messages at once; each is in this list only
# between BLMOVE and HSET).
INFLIGHT_KEY = "kindmem.inflight"


class Channel(redis.Channel):
    _blmove_source: str | None = None
    _brpop_sent_at: float | None = None  # type: ignore[assignment]  # kombu declares None
    _in_poll: Any = None

    def _brpop_start(self, timeout: float | None = None) -> None:
        queues = self._queue_cycle.consume(len(self.active_queues))
        if not queues:
            return
        keys = [self._q_for_pri(queue, pri) for pri in self.priority_steps for queue in queues]
        if len(keys) != 1 or self.global_keyprefix:
            self._blmove_source = None
            super()._brpop_start(timeout)
            return
        self._in_poll = self.client.connection
        self._brpop_sent_at = monotonic()
        self._blmove_source = keys[0]
        wait = self.brpop_timeout if timeout is None else timeout
        self.client.connection.send_command(
            "BLMOVE", keys[0], INFLIGHT_KEY, "RIGHT", "LEFT", wait or 0
        )

    def _brpop_read(self, **options: Any) -> bool:
        source = self._blmove_source
        if source is None:
            return super()._brpop_read(**options)
        self._blmove_source = None
        try:
            try:
                item = self.client.parse_response(self.client.connection, "BLMOVE", **options)
            except self.connection_errors:
                self.client.connection.disconnect()
                raise
            if item is None:
                raise redis.Empty()
            queue = bytes_to_str(source).rsplit(self.sep, 1)[0]
            self._queue_cycle.rotate(queue)
            # records it as unacked (QoS.append) before handing it to the consumer...
            self.connection._deliver(loads(bytes_to_str(item)), queue)
            # ...so only now may it leave the in-flight list
            self.client.lrem(INFLIGHT_KEY, 1, item)
            return True
        finally:
            self._in_poll = None
            self._flush_brpop_reauth()


class Transport(redis.Transport):
    Channel = Channel
