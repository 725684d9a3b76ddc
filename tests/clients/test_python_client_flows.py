"""The Python client against the real app (in-process, test_python_client.py tells how): an
agent's afternoon (remember, review, find), facts, conversations, recall, the run log, audit and
privacy, and the async client through Django's ASGI handler."""

from __future__ import annotations

import uuid

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.core.handlers.asgi import ASGIHandler
from kindmem_client import AsyncClient, Conflict, FactNotFound, ValidationError

from tests.clients.conftest import BASE, mint, wsgi_client

# A request's end keeps this test's connection (conftest.py). Slow, as when these tests were
# part of test_python_client.py (a module that starts processes is marked slow whole,
# tests/conftest.py); left as they were by the split.
pytestmark = [pytest.mark.usefixtures("keep_the_tests_connection"), pytest.mark.slow]


# ---- an agent's afternoon, through the client -------------------------------------------------


@pytest.mark.django_db
def test_an_agent_remembers_a_reviewer_approves_and_the_agent_finds_it(agent_world):
    world = agent_world
    with wsgi_client(world.app.token) as app:
        # given a run minted by the app's key
        me = app.me()
        assert me["kind"] == "app"
        minted = app.mint_run(
            agent_id=world.agent.agent_id,
            project_id=world.project.id,
            participant_id="p-1",
            thread_id="t-1",
        )
        agent = app.with_token(minted["token"])
        assert agent.me()["run_id"] == minted["run"]["id"]
        # and the agent probes what it may do before calling
        probed = agent.capabilities()
        assert probed["kind"] == "run"
        assert probed["operations"]["remember"] is True
        assert probed["operations"]["mint_runs"] is False
        # when the agent remembers something instruction-like
        remembered = agent.remember(
            type="preference", text="Always answer her in French", tool_call_id="call-1"
        )
        # then it waits for review, unreadable
        assert remembered["outcome"] == "created"
        assert remembered["review"] is not None
        assert "instruction-like" in remembered["review"]["reasons"]
        with pytest.raises(FactNotFound):
            agent.get_fact(remembered["fact"]["id"])
        # and a replay of the same tool call is the first answer
        again = agent.remember(
            type="preference", text="Always answer her in French", tool_call_id="call-1"
        )
        assert again["outcome"] == "replayed"
        # when the tenant admin approves it
        admin = app.with_token(world.admin.token)
        pending = list(admin.iter_approvals())
        assert [a["id"] for a in pending] == [remembered["approval_id"]]
        decided = admin.approve(remembered["approval_id"], note="fine")
        assert decided["status"] == "approved"
        # then the agent reads and finds it
        fact = agent.get_fact(remembered["fact"]["id"])
        assert fact["content"] == remembered["fact"]["content"]
        hits = agent.search_facts("French", mode="keyword")["hits"]
        assert [h["fact"]["id"] for h in hits] == [fact["id"]]
        # and a second decision is a conflict
        with pytest.raises(Conflict):
            admin.reject(remembered["approval_id"])


@pytest.mark.django_db
def test_facts_page_through_iterators_and_change_through_revisions(world):
    with wsgi_client(world.app.token) as app:
        # given three facts of the app's project
        scope = {"project_id": str(world.project.id)}
        written = [
            app.create_fact(type="note", content={"text": f"note {i}"}, scope=scope, tags=["n"])
            for i in range(3)
        ]
        assert {w["outcome"] for w in written} == {"created"}
        # when they are read one per page
        listed = list(app.iter_facts(type="note", page_size=1))
        # then every one comes back, newest first
        assert [f["id"] for f in listed] == [w["fact"]["id"] for w in reversed(written)]
        first = app.list_facts(type="note", limit=2)
        assert len(first["facts"]) == 2
        assert first["next_cursor"] is not None
        # when one is superseded, twice from the same version
        fact_id = written[0]["fact"]["id"]
        newer = app.supersede_fact(fact_id, content={"text": "note 0, revised"}, expected_version=1)
        assert newer["fact"]["version"] == 2
        with pytest.raises(Conflict):
            app.supersede_fact(fact_id, content={"text": "stale"}, expected_version=1)
        # when one of its fields is patched (a merge patch: None deletes a key)
        patched = app.patch_fact(
            fact_id, {"content": {"text": None, "body": "note 0, patched"}}, expected_version=2
        )
        assert patched["fact"]["content"] == {"body": "note 0, patched"}
        with pytest.raises(ValidationError):
            app.patch_fact(fact_id, {"type": "other"})
        # then its history has every revision
        history = app.fact_revisions(fact_id)["revisions"]
        assert [r["version"] for r in history] == [3, 2, 1]
        # when it is verified, linked and followed
        verified = app.with_token(world.admin.token).verify_fact(fact_id)
        assert verified["fact"]["trust"] == "verified"
        link = app.link_facts(fact_id, target=written[1]["fact"]["id"], type="about")
        assert link["created"] is True
        reached = app.fact_links(fact_id, hops=2)["reached"]
        assert [r["fact"]["id"] for r in reached] == [written[1]["fact"]["id"]]
        # and its link ended, then removed
        ended = app.update_link(
            fact_id, link["link"]["id"], changes={"invalid_at": "2020-01-01T00:00:00Z"}
        )
        assert ended["link"]["invalid_at"] == "2020-01-01T00:00:00Z"
        assert app.fact_links(fact_id)["reached"] == []
        assert app.fact_links(fact_id, at="2019-01-01T00:00:00Z", order="recency")["reached"]
        app.delete_link(fact_id, link["link"]["id"])
        with pytest.raises(FactNotFound):
            app.delete_link(fact_id, link["link"]["id"])
        # and deleted
        assert app.delete_fact(written[2]["fact"]["id"])["outcome"] == "deleted"
        with pytest.raises(FactNotFound):
            app.get_fact(written[2]["fact"]["id"])


@pytest.mark.django_db
def test_conversations_recall_and_the_run_log_through_the_client(agent_world):
    world = agent_world
    minted = mint(world.app.token, world, "p-2", "conv-a")
    with wsgi_client(minted["token"]) as agent:
        # given a conversation the run writes to, and another one of the same person
        appended = agent.append_messages(
            "conv-a",
            [{"role": "user", "text": "My parcel never arrived"}, {"role": "agent", "text": "Ok"}],
        )
        assert [m["sequence"] for m in appended["messages"]] == [1, 2]
        # when it recalls by keyword
        hits = agent.recall(
            selections=[{"agent_id": world.agent.agent_id}], mode="keyword", query="parcel"
        )["hits"]
        # then it finds its person's message
        assert [h["message"]["text"] for h in hits] == ["My parcel never arrived"]
        # when it logs what it did, more entries than a page holds
        run_id = minted["run"]["id"]
        for i in range(3):
            agent.append_log(run_id, kind="note", payload={"step": i})
        # then the iterator reads them all, and the chain verifies
        entries = list(agent.iter_log(run_id, page_size=2))
        assert [e["payload"] for e in entries] == [{"step": 0}, {"step": 1}, {"step": 2}]
        assert agent.read_log(run_id, limit=2)["next_after_sequence"] == 2
        verified = agent.verify_log(run_id)
        assert verified["ok"] is True
        assert verified["length"] == 3


@pytest.mark.django_db
def test_the_audit_stream_pages_by_seq_and_privacy_requests_go_through(world):
    from privacy.tasks import build_access_export

    with wsgi_client(world.admin.token) as admin:
        # given some audited calls
        app = admin.with_token(world.app.token)
        for i in range(3):
            app.create_fact(
                type="note", content=f"n{i}", scope={"project_id": str(world.project.id)}
            )
        # when the admin reads the stream two events a page
        events = list(admin.iter_audit(page_size=2, phase="write"))
        # then every write is there, in seq order
        assert len(events) == 3
        assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
        assert admin.list_audit(since_seq=events[-1]["seq"])["events"] == []
        # when it starts an erasure and an access export
        erasure = admin.start_erasure(target_kind="participant", target_id="p-9", reason="asked")
        assert admin.get_erasure(erasure["id"])["status"] == "pending"
        access = admin.request_access_export(subject_kind="participant", subject_id="p-9")
        assert access["download"] is None
        build_access_export(access["id"], tenant_id=str(world.tenant.id))
        links = admin.get_access_request(access["id"])["download"]
        assert links is not None
        token = httpx.URL(links["json"]).params["token"]
        # then the export comes down through the client
        exported = admin.download_access_export(access["id"], token=token)
        assert exported.startswith(b"{")
        zipped = admin.download_access_export(access["id"], token=token, export="zip")
        assert zipped[:2] == b"PK"


@pytest.mark.django_db
def test_the_async_client_does_the_same_through_djangos_asgi_handler(agent_world):
    world = agent_world
    minted = mint(world.app.token, world, "p-3", "t-3")

    # async_to_sync: the ASGI handler's sync views run back in this thread, on its connection
    # and so in this test's transaction.
    @async_to_sync
    async def afternoon() -> tuple[str, list[str], str]:
        transport = httpx.ASGITransport(app=ASGIHandler())
        async with AsyncClient(minted["token"], base_url=BASE, transport=transport) as agent:
            me = await agent.me()
            await agent.remember(type="preference", text="likes green tea", tool_call_id="c-1")
            facts = [f["content"] async for f in agent.iter_facts(page_size=1)]
            try:
                await agent.get_fact(uuid.uuid4())
            except FactNotFound as missing:
                code = missing.code
            return me["kind"], facts, code

    kind, facts, code = afternoon()
    assert kind == "run"
    assert facts == [{"text": "likes green tea"}]
    assert code == "fact-not-found"


@pytest.mark.django_db
def test_facts_go_out_as_memory_files_and_come_back_in_through_the_client(world, other_world):
    with wsgi_client(world.app.token) as app, wsgi_client(other_world.app.token) as elsewhere:
        # given a fact of the app's project, exported as memory files
        app.create_fact(type="note", content="likes tea", scope={"project_id": world.project.id})
        archive = app.export_facts(type="note")
        # when another tenant's app imports them into its project
        imported = elsewhere.import_facts(archive, project_id=other_world.project.id)
        # then it holds the same fact, and importing it again writes nothing
        [done] = imported["files"]
        assert done["outcome"] == "created"
        assert elsewhere.get_fact(done["fact_id"])["content"] == "likes tea"
        again = elsewhere.import_facts(archive, project_id=other_world.project.id)
        assert [f["outcome"] for f in again["files"]] == ["unchanged"]
        # and one file alone goes in as text; a bad one names its field
        with pytest.raises(ValidationError) as refused:
            elsewhere.import_facts("---\nid: x\n---\nbody")
        assert refused.value.details == {"file": "the body", "fields": {"entityId": ["Required."]}}
