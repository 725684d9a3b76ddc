"""`KindmemStore` (kindmem_client.langgraph) against a live kindmem: LangGraph's `BaseStore`
semantics as its documentation states them, LangMem's memory tools unchanged on top of it, and
what kindmem adds (scopes, history, the reader guard).

Everything goes over HTTP to a gunicorn on the test database (tests/clients/conftest.py);
nothing of kindmem or LangGraph is mocked.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import pytest
from kindmem_client import AsyncClient, Client
from kindmem_client.langgraph import KindmemStore, slot_key, slot_parse
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

pytestmark = pytest.mark.django_db(transaction=True)


def participant_scope(tenancy: Any, participant: str) -> dict[str, str]:
    return {"project_id": str(tenancy.project.id), "participant_id": participant}


@pytest.fixture
def app(live_url, tenancy):
    with Client(tenancy.app.token, base_url=live_url) as client:
        yield client


@pytest.fixture
def store(app, tenancy) -> KindmemStore:
    """A store an app files under one end user, `cust-1`."""
    return KindmemStore(app, scope=participant_scope(tenancy, "cust-1"))


def run_client(app: Client, tenancy: Any, participant: str) -> Client:
    run = app.mint_run(
        agent_id=tenancy.agent.agent_id, project_id=tenancy.project.id, participant_id=participant
    )
    return app.with_token(run["token"])


def in_own_loop(coroutine: Any) -> Any:
    """Run `coroutine` on a loop of its own thread (this thread's may be a browser's)."""
    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, coroutine).result()


# ---- BaseStore, as LangGraph documents it -----------------------------------------------------


def test_put_then_get_returns_the_item_with_its_namespace_key_value_and_times(store):
    # given an item put in a namespace
    store.put(("users", "123"), "prefs", {"theme": "dark", "size": 3})

    # when it is read back by namespace and key
    item = store.get(("users", "123"), "prefs")

    # then it is the item as put, created and updated at its one write
    assert item is not None
    assert (item.namespace, item.key, item.value) == (
        ("users", "123"),
        "prefs",
        {"theme": "dark", "size": 3},
    )
    assert isinstance(item.created_at, datetime)
    assert item.created_at.tzinfo is not None
    assert item.created_at == item.updated_at
    # and a key or namespace never put is None
    assert store.get(("users", "123"), "other") is None
    assert store.get(("users", "124"), "prefs") is None
    assert store.get(("users",), "prefs") is None


def test_a_second_put_replaces_the_value_and_keeps_created_at(store, app):
    # given an item
    store.put(("docs",), "report", {"memory": "Will likes ai"})
    first = store.get(("docs",), "report")

    # when the same key is put again with another value
    store.put(("docs",), "report", {"memory": "Will likes ai and chess"})
    second = store.get(("docs",), "report")

    # then the value is replaced, created_at kept, updated_at later
    assert second.value == {"memory": "Will likes ai and chess"}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    # and kindmem kept the value it replaced, as the fact's history
    [fact] = app.list_facts(type="langgraph", key=slot_key(("docs",), "report"))["facts"]
    history = app.fact_revisions(fact["id"])["revisions"]
    assert [r["content"] for r in history] == [
        {"memory": "Will likes ai and chess"},
        {"memory": "Will likes ai"},
    ]
    # and putting the same value again writes nothing new
    store.put(("docs",), "report", {"memory": "Will likes ai and chess"})
    assert len(app.fact_revisions(fact["id"])["revisions"]) == 2


def test_delete_and_a_put_of_none_remove_the_item(store):
    # given two items
    store.put(("docs",), "a", {"text": "alpha"})
    store.put(("docs",), "b", {"text": "beta"})

    # when one is deleted and the other put as None
    store.delete(("docs",), "a")
    store.batch([PutOp(("docs",), "b", None)])

    # then neither is found, by get or by search; deleting again is no error
    assert store.get(("docs",), "a") is None
    assert store.get(("docs",), "b") is None
    assert store.search(("docs",)) == []
    store.delete(("docs",), "a")
    # and the key can be used again
    store.put(("docs",), "a", {"text": "alpha again"})
    assert store.get(("docs",), "a").value == {"text": "alpha again"}


def test_search_is_within_the_namespace_prefix(store):
    # given items in nested namespaces
    store.put(("docs", "user1"), "d1", {"text": "one"})
    store.put(("docs", "user2"), "d2", {"text": "two"})
    store.put(("docs", "user2", "drafts"), "d3", {"text": "three"})
    store.put(("documents",), "d4", {"text": "four"})

    # when searched by prefix (no query: newest change first)
    def keys(prefix: tuple[str, ...]) -> list[str]:
        return [item.key for item in store.search(prefix)]

    # then a prefix matches whole labels, from the root, at any depth below it
    assert keys(("docs",)) == ["d3", "d2", "d1"]
    assert keys(("docs", "user2")) == ["d3", "d2"]
    assert keys(("docs", "user2", "drafts")) == ["d3"]
    assert keys(("docs", "user")) == []
    assert keys(()) == ["d4", "d3", "d2", "d1"]
    # and each result is a SearchItem with its namespace, and no score without a query
    [hit] = store.search(("documents",))
    assert (hit.namespace, hit.key, hit.value, hit.score) == (
        ("documents",),
        "d4",
        {"text": "four"},
        None,
    )


def test_search_filters_on_value_fields_with_the_documented_operators(store):
    # given products with a type, a price, a colour and nested metadata
    products = {
        "p1": {"type": "report", "status": "active", "score": 4.5, "meta": {"lang": "en"}},
        "p2": {"type": "report", "status": "draft", "score": 2.0, "meta": {"lang": "fr"}},
        "p3": {"type": "note", "status": "active", "score": 5.0, "meta": {"lang": "en"}},
        "p4": {"type": "note", "status": "active", "tags": ["a", "b"]},
    }
    for key, value in products.items():
        store.put(("products",), key, value)

    def keys(**filter: Any) -> set[str]:
        return {item.key for item in store.search(("products",), filter=filter)}

    # then exact values, operators, nested dicts and lists select as LangGraph documents
    assert keys(type="report", status="active") == {"p1"}
    assert keys(type={"$eq": "note"}) == {"p3", "p4"}
    assert keys(status={"$ne": "active"}) == {"p2"}
    assert keys(score={"$gt": 4.5}) == {"p3"}
    assert keys(score={"$gte": 4.5}) == {"p1", "p3"}
    assert keys(score={"$lt": 4.5}) == {"p2"}
    assert keys(score={"$lte": 4.5}) == {"p1", "p2"}
    assert keys(score={"$gte": 3.0}, type="report") == {"p1"}
    assert keys(score={"$gt": 1, "$lt": 5}) == {"p1", "p2"}
    assert keys(meta={"lang": "en"}) == {"p1", "p3"}
    assert keys(tags=["a", "b"]) == {"p4"}
    assert keys(tags=["b", "a"]) == set()
    assert keys(missing="x") == set()


def test_search_pages_with_limit_and_offset(store):
    # given twelve items
    for i in range(12):
        store.put(("pages",), f"k{i:02}", {"n": i, "parity": i % 2})

    # when read in pages of five
    pages = [
        [item.value["n"] for item in store.search(("pages",), limit=5, offset=offset)]
        for offset in (0, 5, 10)
    ]

    # then the pages follow each other without overlap, newest change first; the default
    # limit is 10; offset and limit apply after the filter
    assert pages == [[11, 10, 9, 8, 7], [6, 5, 4, 3, 2], [1, 0]]
    assert len(store.search(("pages",))) == 10
    odd = store.search(("pages",), filter={"parity": 1}, limit=2, offset=1)
    assert [item.value["n"] for item in odd] == [9, 7]


def test_a_query_is_kindmem_hybrid_search_ranked_with_scores(store):
    # given memories about different things
    store.put(("memories",), "m1", {"text": "prefers green tea in the morning"})
    store.put(("memories",), "m2", {"text": "works as a marine biologist"})
    store.put(("memories",), "m3", {"text": "allergic to peanuts"})
    store.put(("elsewhere",), "m4", {"text": "green tea is sold out"})

    # when searched in natural language
    hits = store.search(("memories",), query="what tea does she drink", limit=2)

    # then the best match comes first, with a score, only from the prefix
    assert hits[0].key == "m1"
    assert all(hit.score is not None and hit.score > 0 for hit in hits)
    assert all(hit.namespace == ("memories",) for hit in hits)
    assert len(hits) <= 2
    # and a filter and an offset apply to the ranked hits
    assert store.search(("memories",), query="tea", filter={"text": "nothing"}) == []
    ranked = [h.key for h in store.search(("memories",), query="green tea peanuts", limit=10)]
    assert [h.key for h in store.search(("memories",), query="green tea peanuts", offset=1)] == (
        ranked[1:]
    )


def test_list_namespaces_with_prefix_suffix_wildcards_depth_and_paging(store):
    # given the namespaces of LangGraph's own example
    for namespace in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]:
        store.put(namespace, "k", {"n": len(namespace)})
    store.put(("a", "b", "c"), "k2", {"n": 0})  # a namespace with two items is listed once

    # then its documented answer, and the other conditions
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces() == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("*", "e")) == [("a", "b", "d", "e")]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "c")]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    assert store.list_namespaces(prefix=("b",)) == []


def test_labels_and_keys_with_slashes_and_percent_signs_round_trip(store):
    # given labels and a key holding the separator and the escape character
    namespace = ("a/b", "100%", "%2F")
    store.put(namespace, "x/y%z", {"ok": True})

    # then each is read back exactly, and namespaces list as they were given
    assert store.get(namespace, "x/y%z").value == {"ok": True}
    assert store.get(("a", "b", "100%", "%2F"), "x/y%z") is None
    assert [i.namespace for i in store.search(("a/b",))] == [namespace]
    assert store.list_namespaces() == [namespace]
    assert slot_parse(slot_key(namespace, "x/y%z")) == (namespace, "x/y%z")


def test_a_batch_runs_in_order_and_returns_one_result_per_op(store):
    results = store.batch(
        [
            PutOp(("b",), "k", {"v": 1}),
            GetOp(("b",), "k"),
            PutOp(("b",), "k", {"v": 2}),
            SearchOp(("b",)),
            PutOp(("b",), "k", None),
            GetOp(("b",), "k"),
        ]
    )
    assert results[0] is None
    assert results[1].value == {"v": 1}
    assert results[2] is None
    assert [i.value for i in results[3]] == [{"v": 2}]
    assert results[4:] == [None, None]


def test_what_langgraph_refuses_is_refused(store):
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "x"), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("a.b",), "k")])
    with pytest.raises(InvalidNamespaceError):
        store.search(("",))
    with pytest.raises(NotImplementedError):
        store.put(("a",), "k", {"v": 1}, ttl=5)
    with pytest.raises(ValueError, match="200"):
        store.put(("a",), "k" * 300, {"v": 1})


def test_the_async_methods_do_the_same_through_the_async_client(live_url, tenancy):
    scope = participant_scope(tenancy, "cust-1")

    async def afternoon() -> tuple[Any, ...]:
        async with AsyncClient(tenancy.app.token, base_url=live_url) as client:
            store = KindmemStore(async_client=client, scope=scope)
            await store.aput(("a", "b"), "k", {"text": "green tea"})
            await store.aput(("a", "c"), "k", {"text": "black coffee"})
            got = await store.aget(("a", "b"), "k")
            hits = await store.asearch(("a",), query="tea")
            spaces = await store.alist_namespaces(prefix=("a",))
            await store.adelete(("a", "b"), "k")
            gone = await store.aget(("a", "b"), "k")
            with pytest.raises(RuntimeError, match="AsyncClient"):
                store.get(("a", "b"), "k")
            return got.value, hits[0].key, hits[0].namespace, spaces, gone

    assert in_own_loop(afternoon()) == (
        {"text": "green tea"},
        "k",
        ("a", "b"),
        [("a", "b"), ("a", "c")],
        None,
    )


def test_the_async_methods_of_a_store_with_a_sync_client_run_it_in_a_thread(store):
    async def afternoon() -> Any:
        await store.aput(("t",), "k", {"v": 1})
        return (await store.aget(("t",), "k")).value

    assert in_own_loop(afternoon()) == {"v": 1}


# ---- what kindmem adds: scopes and the reader guard -------------------------------------------


def test_an_item_is_a_fact_in_the_scope_with_slot_key_tags_and_content(store, app, tenancy):
    # when an item is put
    store.put(("memories", "cust-1"), "tea", {"content": "Prefers green tea"})

    # then kindmem holds one fact of the store's type, in the store's scope, in that slot
    [fact] = list(app.iter_facts(type="langgraph"))
    assert fact["key"] == "memories/cust-1/tea"
    assert fact["tags"] == ["ns:memories", "ns:memories/cust-1"]
    assert fact["content"] == {"content": "Prefers green tea"}
    assert fact["scope"]["participant_id"] == "cust-1"
    assert fact["scope"]["project_id"] == str(tenancy.project.id)
    assert fact["subjects"] == [{"kind": "participant", "id": "cust-1"}]


def test_a_scope_per_namespace_files_each_end_users_items_under_them(app, tenancy):
    # given an app's store that files ("memories", <end user>) under that end user
    project = str(tenancy.project.id)
    store = KindmemStore(app, scope=lambda ns: {"project_id": project, "participant_id": ns[1]})
    store.put(("memories", "cust-1"), "m", {"text": "cust-1 likes tea"})
    store.put(("memories", "cust-2"), "m", {"text": "cust-2 likes coffee"})

    # then the app reads both, and each end user's run only their own
    assert [i.namespace for i in store.search(("memories",))] == [
        ("memories", "cust-2"),
        ("memories", "cust-1"),
    ]
    for person, other in (("cust-1", "cust-2"), ("cust-2", "cust-1")):
        mine = KindmemStore(run_client(app, tenancy, person))  # the run's own scope
        assert mine.get(("memories", person), "m").value["text"].startswith(person)
        assert mine.get(("memories", other), "m") is None
        assert [i.namespace for i in mine.search(("memories",))] == [("memories", person)]
        assert mine.search(("memories",), query="likes tea coffee")[0].namespace == (
            "memories",
            person,
        )
        assert mine.list_namespaces() == [("memories", person)]


def test_a_run_token_store_writes_into_the_runs_end_user_as_an_unverified_agent_memory(
    app, tenancy
):
    # given a store on a run token of end user cust-9, no scope given
    agent = run_client(app, tenancy, "cust-9")
    store = KindmemStore(agent)

    # when it puts an item
    store.put(("notes",), "n", {"text": "asked about a refund"})

    # then the fact is the run's end user's, written by the agent, unverified
    assert store.get(("notes",), "n").value == {"text": "asked about a refund"}
    [fact] = agent.list_facts(type="langgraph")["facts"]
    assert fact["scope"]["participant_id"] == "cust-9"
    assert fact["trust"] == "unverified"
    assert fact["attributed_to"]["kind"] == "agent"
    # and another store's item of the same slot in another scope is not this store's item
    KindmemStore(app, scope={"project_id": str(tenancy.project.id)}).put(
        ("notes",), "n", {"text": "project-wide"}
    )
    assert store.get(("notes",), "n").value == {"text": "asked about a refund"}


def test_an_app_key_store_must_be_given_its_scope(app):
    with pytest.raises(ValueError, match="scope"):
        KindmemStore(app).put(("a",), "k", {"v": 1})


# ---- LangMem's tools, unchanged ---------------------------------------------------------------


def test_langmems_manage_and_search_tools_run_unchanged_against_the_store(app, tenancy):
    from langmem import create_manage_memory_tool, create_search_memory_tool

    # given LangMem's two memory tools on a store that files each user's memories under them
    project = str(tenancy.project.id)
    store = KindmemStore(app, scope=lambda ns: {"project_id": project, "participant_id": ns[1]})
    namespace = ("memories", "{langgraph_user_id}")
    manage = create_manage_memory_tool(namespace=namespace, store=store)
    search = create_search_memory_tool(namespace=namespace, store=store)
    as_cust_1 = {"configurable": {"langgraph_user_id": "cust-1"}}
    as_cust_2 = {"configurable": {"langgraph_user_id": "cust-2"}}

    # when the model's tool calls create two memories for cust-1 and one for cust-2
    created = manage.invoke({"content": "Prefers green tea", "action": "create"}, as_cust_1)
    manage.invoke({"content": "Lives in Lisbon"}, as_cust_1)
    manage.invoke({"content": "Prefers espresso"}, as_cust_2)
    memory_id = created.removeprefix("created memory ")
    assert uuid.UUID(memory_id)

    # then searching as cust-1 finds cust-1's, the best match first, in LangMem's shape
    found = json.loads(search.invoke({"query": "what tea does she like"}, as_cust_1))
    assert found[0]["key"] == memory_id
    assert found[0]["value"] == {"content": "Prefers green tea"}
    assert found[0]["namespace"] == ["memories", "cust-1"]
    assert {m["value"]["content"] for m in found} == {"Prefers green tea", "Lives in Lisbon"}

    # when the tool updates the memory, then it is the fact's next revision
    updated = manage.invoke(
        {"content": "Prefers jasmine tea", "action": "update", "id": memory_id}, as_cust_1
    )
    assert updated == f"updated memory {memory_id}"
    found = json.loads(search.invoke({"query": "tea", "limit": 1}, as_cust_1))
    assert [m["value"]["content"] for m in found] == ["Prefers jasmine tea"]
    [fact] = app.list_facts(type="langgraph", key=f"memories/cust-1/{memory_id}")["facts"]
    assert fact["version"] == 2
    assert fact["scope"]["participant_id"] == "cust-1"

    # and async, as an agent calls it, the same tools delete it
    async def delete() -> str:
        return await manage.ainvoke({"action": "delete", "id": memory_id}, as_cust_1)

    assert in_own_loop(delete()) == f"Deleted memory {memory_id}"
    left = json.loads(search.invoke({"query": "tea"}, as_cust_1))
    assert [m["value"]["content"] for m in left] == ["Lives in Lisbon"]
    # and cust-2's end-user run, through the same tool, sees only cust-2's memory
    theirs = create_search_memory_tool(
        namespace=namespace, store=KindmemStore(run_client(app, tenancy, "cust-2"))
    )
    seen = json.loads(theirs.invoke({"query": "tea Lisbon espresso"}, as_cust_2))
    assert [m["value"]["content"] for m in seen] == ["Prefers espresso"]
    assert json.loads(theirs.invoke({"query": "tea Lisbon"}, as_cust_1)) == []


def test_a_langgraph_graph_reads_and_writes_memories_through_the_store(store):
    from langgraph.graph import START, StateGraph
    from langgraph.store.base import BaseStore
    from typing_extensions import TypedDict

    class State(TypedDict):
        question: str
        answer: str

    def remember_and_recall(state: State, *, store: BaseStore) -> dict[str, str]:
        store.put(("memories",), "drink", {"text": "drinks green tea"})
        [hit] = store.search(("memories",), query=state["question"], limit=1)
        return {"answer": hit.value["text"]}

    graph = StateGraph(State)
    graph.add_node("remember_and_recall", remember_and_recall)
    graph.add_edge(START, "remember_and_recall")
    app = graph.compile(store=store)

    assert app.invoke({"question": "what does she drink?"})["answer"] == "drinks green tea"
    assert store.get(("memories",), "drink").value == {"text": "drinks green tea"}
