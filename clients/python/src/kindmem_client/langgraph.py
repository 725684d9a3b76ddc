"""`KindmemStore`: a LangGraph `BaseStore` kept in kindmem (extra `kindmem-client[langgraph]`).

A LangGraph app (or LangMem's memory tools) keeps its long-term memory in kindmem, and gets
kindmem's reader guard, versioned history, review, audit, subject access and erasure with it.

    from kindmem_client import Client
    from kindmem_client.langgraph import KindmemStore

    store = KindmemStore(Client(RUN_TOKEN, base_url=URL))  # items go to the run's end user
    store.put(("memories", "cust-42"), "tea", {"content": "Prefers green tea"})
    store.get(("memories", "cust-42"), "tea").value  # {"content": "Prefers green tea"}
    store.search(("memories",), query="what does she drink?")

How LangGraph's items are kindmem facts
---------------------------------------

One item is one kindmem fact; every change of it is that fact's next revision.

========================  =====================================================================
LangGraph                 kindmem
========================  =====================================================================
the store                 facts of one `type` (default `langgraph`) in one kindmem scope
``(namespace, key)``      the fact's slot ``key``: the labels and the key joined by ``/``, each
                          with ``%`` and ``/`` escaped (``%25``, ``%2F``), so
                          ``("memories", "cust-42"), "tea"`` is ``memories/cust-42/tea``; at
                          most 200 characters (kindmem's limit on a slot key)
each namespace prefix     a tag ``ns:<prefix>`` (``ns:memories``, ``ns:memories/cust-42``), so
                          a search within a prefix is narrowed by kindmem itself; a prefix
                          longer than a tag may be is tagged ``ns#<sha256 of it>``
``value`` (a dict)        the fact's ``content``, stored and returned as given
``put`` of a new key      ``POST /v1/facts`` (``create_fact``), in the store's scope
``put`` of a key          ``POST /v1/facts/{id}/supersede`` with ``expected_version``: the next
                          revision; the value it replaces stays in the fact's history
``put(..., None)``,       ``DELETE /v1/facts/{id}``: invalidated (``deleted``), refused with
``delete``                ``RetentionViolation`` where retention forbids it
``get``                   ``GET /v1/facts?type=&key=`` narrowed to the scope
``search`` with a query   ``POST /v1/facts/search`` (hybrid by default: keyword and semantic,
                          fused by rank), narrowed by type, prefix tag and scope; ``score`` is
                          the hit's
``search`` without one    ``GET /v1/facts`` newest change first, narrowed the same way
``filter``                applied to the values as LangGraph's own stores do (``$eq``,
                          ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``, nested dicts, exact
                          values); ``limit`` and ``offset`` after it
``list_namespaces``       the distinct namespaces of the store's facts (prefix, suffix, ``*``,
                          ``max_depth``, ``limit``, ``offset``), read from their slots
``created_at``            the fact's first write
``updated_at``            its current revision's write
========================  =====================================================================

**The scope** is where kindmem files an item, and so who may read it and whose erasure removes
it. Give it as ``scope={"project_id": ..., "participant_id": "cust-42"}``, or as a function of
the namespace for an app that serves many end users with one key:
``scope=lambda ns: {"project_id": PROJECT, "participant_id": ns[1]}`` files
``("memories", "cust-42")`` under the end user ``cust-42``, so erasing her erases her
memories. Left out with a run token, it is the run's end user (else its Kindgi user, else its
conversation) in the run's project; an API key must name it. An item is the fact of the store's
type and slot whose scope is exactly the namespace's scope: an item another store wrote for
another scope is not this store's, even where the credential may read it.

**What kindmem adds.** Reads return what the credential may read, and only current, approved,
unexpired revisions. An agent's run writes ``trust: unverified``, and what remember's review
rules hold back (a scope wider than one person or conversation, text that reads like an
instruction, hidden characters) is not readable until a reviewer approves it: ``put`` does not
fail, ``get`` answers ``None`` meanwhile. A semantic or hybrid search with no embedder
configured raises ``EmbeddingUnavailable``, never an empty list (``mode="keyword"`` needs none).

**Limits.** kindmem indexes each value's text itself (``text`` of the value when it has one,
else every string in it), so ``put``'s ``index`` argument changes nothing; TTLs are not
supported (``ttl`` raises ``NotImplementedError``, as LangGraph's stores without TTL do: use
kindmem's retention). A search with a query reaches kindmem's best 100 hits (its ``top_k``
limit), so ``offset + limit`` past 100, or a ``filter`` that drops most of them, returns fewer.
``list_namespaces`` reads every fact of the store's type within the prefix (one request per
200). Two first writes of one new key at the same moment may make two facts; reads then take
the newer.

Both ``batch`` and ``abatch`` run their operations in order, so a ``get`` after a ``put`` in
one batch sees it. ``batch`` needs the sync ``Client``; ``abatch`` uses the ``AsyncClient``
when given one, else runs the sync client in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio.to_thread

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as missing:  # pragma: no cover - the message is the point
    raise ImportError(
        "kindmem_client.langgraph needs LangGraph: pip install 'kindmem-client[langgraph]'"
    ) from missing

from kindmem_client._async import AsyncClient
from kindmem_client._langgraph_mapping import (
    Scope,
    check_labels,
    fact_item,
    fact_search_item,
    namespace_tags,
    normal_scope,
    prefix_tag,
    run_scope,
    scope_matches,
    slot_key,
    slot_parse,
)
from kindmem_client._store_filters import namespace_matches, value_matches
from kindmem_client._sync import Client
from kindmem_client.errors import Conflict, FactNotFound
from kindmem_client.types import Fact

__all__ = ["KindmemStore", "namespace_tags", "slot_key", "slot_parse"]

DEFAULT_TYPE = "langgraph"
MAX_TOP_K = 100  # kindmem's limit on a search's top_k
PAGE = 200  # GET /v1/facts's largest page
SCOPE_KEYS = ("org_id", "project_id", "user_id", "participant_id", "thread_id", "session_id")

ScopeFor = Callable[[tuple[str, ...]], Scope]


# ---- one operation as a sequence of client calls ----------------------------------------------


@dataclass(frozen=True)
class _Call:
    """One client method to call, by name, with its keywords: the sync and the async driver
    call it on their client, so each operation is written once."""

    method: str
    kwargs: dict[str, Any] = field(default_factory=dict)


_Steps = Generator[_Call, Any, Any]


class KindmemStore(BaseStore):
    """A LangGraph store whose items are kindmem facts (the mapping is the module docstring).

    `client` is a sync `Client` (for `batch`, LangGraph's sync methods) and `async_client` an
    `AsyncClient` (for `abatch`); one of them is enough for its side, and `abatch` falls back
    to the sync one in a worker thread. `scope` is where items are filed: a scope dict, or a
    function of the namespace; left out with a run token, the run's person. `type` is the
    facts' type; `mode` the search mode of a query (``hybrid``, ``semantic`` or ``keyword``).
    """

    __slots__ = ("_async_client", "_client", "_scope", "_scope_default", "mode", "type")

    supports_ttl = False

    def __init__(
        self,
        client: Client | None = None,
        *,
        async_client: AsyncClient | None = None,
        scope: Scope | ScopeFor | None = None,
        type: str = DEFAULT_TYPE,
        mode: Literal["hybrid", "semantic", "keyword"] = "hybrid",
    ) -> None:
        if client is None and async_client is None:
            raise ValueError("KindmemStore needs a kindmem Client or AsyncClient")
        self._client = client
        self._async_client = async_client
        self._scope = scope
        self._scope_default: dict[str, str] | None = None
        self.type = type
        self.mode = mode

    # ---- drivers ------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self._client is None:
            raise RuntimeError(
                "KindmemStore was given only an AsyncClient: use its async methods (aget, aput, "
                "asearch, ...), or give it a sync Client too"
            )
        client = self._client
        results: list[Result] = []
        for op in ops:
            steps = self._steps(op)
            sent: Any = None
            error: BaseException | None = None
            while True:
                try:
                    call = steps.throw(error) if error is not None else steps.send(sent)
                except StopIteration as done:
                    results.append(done.value)
                    break
                error = None
                try:
                    sent = getattr(client, call.method)(**call.kwargs)
                except Exception as exc:  # handed to the operation, which decides
                    error = exc
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        if self._async_client is None:
            listed = list(ops)
            return await anyio.to_thread.run_sync(self.batch, listed)
        client = self._async_client
        results: list[Result] = []
        for op in ops:
            steps = self._steps(op)
            sent: Any = None
            error: BaseException | None = None
            while True:
                try:
                    call = steps.throw(error) if error is not None else steps.send(sent)
                except StopIteration as done:
                    results.append(done.value)
                    break
                error = None
                try:
                    sent = await getattr(client, call.method)(**call.kwargs)
                except Exception as exc:
                    error = exc
        return results

    # ---- the operations -----------------------------------------------------------------------

    def _steps(self, op: Op) -> _Steps:
        if isinstance(op, GetOp):
            check_labels(op.namespace)
            return self._get(op.namespace, str(op.key))
        if isinstance(op, PutOp):
            check_labels(op.namespace, writing=op.value is not None)
            if op.ttl is not None:
                raise NotImplementedError(
                    "KindmemStore does not support TTLs: kindmem's retention decides how long "
                    "a memory is kept"
                )
            return self._put(op.namespace, str(op.key), op.value)
        if isinstance(op, SearchOp):
            check_labels(op.namespace_prefix)
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            for condition in op.match_conditions or ():
                check_labels(tuple(p for p in condition.path if p != "*"))
            return self._list_namespaces(op)
        raise ValueError(f"Unknown operation type: {type(op).__name__}")

    def _scope_of(self, namespace: tuple[str, ...]) -> _Steps:
        """The scope an item of `namespace` is filed in (asks the server once, for a run's)."""
        if callable(self._scope):
            return normal_scope(self._scope(namespace))
        if self._scope is not None:
            return normal_scope(self._scope)
        if self._scope_default is None:
            me = yield _Call("me")
            self._scope_default = run_scope(me)
        return self._scope_default

    def _fixed_scope(self) -> _Steps:
        """The one scope of every item, or None when it depends on the namespace."""
        if callable(self._scope):
            return None
        return (yield from self._scope_of(()))

    def _facts(self, filters: dict[str, Any], cursor: str | None) -> _Call:
        """One page of the store's facts, newest change first."""
        return _Call("list_facts", {"type": self.type, **filters, "limit": PAGE, "cursor": cursor})

    def _find(self, namespace: tuple[str, ...], key: str) -> _Steps:
        """The fact that is the item `(namespace, key)`, or None."""
        scope = yield from self._scope_of(namespace)
        filters = {"key": slot_key(namespace, key), **scope}
        cursor = None
        while True:
            page = yield self._facts(filters, cursor)
            # newest first: if two first writes raced, the newer one is the item
            for fact in page["facts"]:
                if scope_matches(fact, scope):
                    return fact
            cursor = page["next_cursor"]
            if cursor is None:
                return None

    def _get(self, namespace: tuple[str, ...], key: str) -> _Steps:
        fact = yield from self._find(namespace, key)
        return None if fact is None else fact_item(fact, namespace, key)

    def _put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any] | None) -> _Steps:
        for _attempt in range(3):
            fact = yield from self._find(namespace, key)
            try:
                if value is None:
                    if fact is not None:
                        yield _Call("delete_fact", {"fact_id": fact["id"]})
                    return None
                content = dict(value)
                if fact is None:
                    scope = yield from self._scope_of(namespace)
                    yield _Call(
                        "create_fact",
                        {
                            "type": self.type,
                            "content": content,
                            "scope": scope,
                            "key": slot_key(namespace, key),
                            "tags": namespace_tags(namespace),
                        },
                    )
                elif fact["content"] != content:
                    yield _Call(
                        "supersede_fact",
                        {
                            "fact_id": fact["id"],
                            "content": content,
                            "expected_version": fact["version"],
                        },
                    )
                return None
            except (Conflict, FactNotFound):
                # another writer moved the item on (or deleted it) since it was read: read
                # it again and apply this write to what is there now (last write wins)
                continue
        raise Conflict(f"the item {namespace!r}, {key!r} kept changing under this write")

    def _placed(self, fact: Fact, prefix: tuple[str, ...]) -> _Steps:
        """`(namespace, key)` of a fact that is an item of this store under `prefix`, or None."""
        place = slot_parse(fact["key"] or "")
        if place is None or place[0][: len(prefix)] != prefix:
            return None
        scope = yield from self._scope_of(place[0])
        return place if scope_matches(fact, scope) else None

    def _search(self, op: SearchOp) -> _Steps:
        fixed = yield from self._fixed_scope()
        prefix = tuple(op.namespace_prefix)
        items: list[SearchItem] = []
        skipped = 0

        def take(fact: Fact, place: tuple[tuple[str, ...], str], score: float | None) -> bool:
            """Keep `fact` if the filter and offset let it through; True once the page is full."""
            nonlocal skipped
            if not isinstance(fact["content"], dict) or not value_matches(
                fact["content"], op.filter
            ):
                return False
            if skipped < op.offset:
                skipped += 1
                return False
            items.append(fact_search_item(fact, *place, score))
            return len(items) >= op.limit

        if op.limit <= 0:
            return items
        if op.query:
            wanted = op.offset + op.limit
            # the filter and the exact scope are applied here, after kindmem ranked: ask for
            # as many hits as it gives when they may drop some
            keep_all = op.filter or callable(self._scope)
            found = yield _Call(
                "search_facts",
                {
                    "query": op.query,
                    "mode": self.mode,
                    "type": self.type,
                    "tags": [prefix_tag(prefix)] if prefix else None,
                    "scope": fixed or None,
                    "top_k": MAX_TOP_K if keep_all else min(MAX_TOP_K, wanted),
                },
            )
            for hit in found["hits"]:
                place = yield from self._placed(hit["fact"], prefix)
                if place is not None and take(hit["fact"], place, hit["score"]):
                    break
            return items
        filters = {"tag": prefix_tag(prefix) if prefix else None, **(fixed or {})}
        cursor = None
        while True:
            page = yield self._facts(filters, cursor)
            for fact in page["facts"]:
                place = yield from self._placed(fact, prefix)
                if place is not None and take(fact, place, None):
                    return items
            cursor = page["next_cursor"]
            if cursor is None:
                return items

    def _list_namespaces(self, op: ListNamespacesOp) -> _Steps:
        conditions = tuple(op.match_conditions or ())
        fixed = yield from self._fixed_scope()
        # a prefix condition's labels up to its first wildcard narrow in kindmem already
        prefix: tuple[str, ...] = ()
        for condition in conditions:
            if condition.match_type == "prefix":
                lead: list[str] = []
                for label in condition.path:
                    if label == "*":
                        break
                    lead.append(label)
                prefix = max(prefix, tuple(lead), key=len)
        filters = {"tag": prefix_tag(prefix) if prefix else None, **(fixed or {})}
        found: set[tuple[str, ...]] = set()
        cursor = None
        while True:
            page = yield self._facts(filters, cursor)
            for fact in page["facts"]:
                place = yield from self._placed(fact, ())
                if place is None:
                    continue
                namespace = place[0]
                if all(namespace_matches(c, namespace) for c in conditions):
                    found.add(namespace if op.max_depth is None else namespace[: op.max_depth])
            cursor = page["next_cursor"]
            if cursor is None:
                break
        return sorted(found)[op.offset : op.offset + op.limit]
