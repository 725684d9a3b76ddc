"""A revision is embedded in the write path within a short budget; past it, or when the embedder
fails, it is stored unembedded (its state says so) and `embed_revisions` embeds it later.
`manage.py reembed` moves every current revision to the configured model, resumably."""

from __future__ import annotations

import io
import signal
import time
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from embeddings.providers import EmbeddingFailed, HashingEmbedder
from facts import services
from facts.models import EmbeddingState, Revision
from facts.tasks import embed_backlog, embed_revisions
from tests import factories
from tests.conftest import DEAD_BROKER_WITHIN_SECONDS, publish_warned
from tests.facts.conftest import Reply, well_formed
from tests.kindmem.test_worker import _start_worker

pytestmark = pytest.mark.django_db

HASHING_MODEL = HashingEmbedder.model


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """What the write path queued for `embed_revisions` (on commit)."""
    queued: list[list[str]] = []
    monkeypatch.setattr(
        embed_revisions, "apply_async", lambda args, kwargs, **_: queued.append(args[0])
    )
    return queued


@pytest.fixture
def http_embedder(settings: Any, embeddings_server: Any) -> Any:
    settings.EMBEDDER = "openai"
    settings.EMBEDDER_URL = embeddings_server.url
    settings.EMBEDDER_MODEL = "remote-model"
    settings.EMBEDDER_RETRIES = 0
    settings.EMBEDDER_TIMEOUT_SECONDS = 5
    return embeddings_server


def create(api: Any, headers: dict[str, str], content: Any) -> Any:
    return api.post("/v1/facts", {"type": "note", "content": content}, format="json", **headers)


def test_a_fact_is_embedded_in_its_write_when_the_embedder_answers_in_time(
    api, world, settings, sent, django_capture_on_commit_callbacks
):
    settings.EMBEDDER = "hashing"
    # when a fact is written
    with django_capture_on_commit_callbacks(execute=True):
        response = create(api, world.admin.headers, "likes oolong tea")
    # then its revision carries a vector of the configured model, and nothing is queued
    assert response.status_code == 201
    assert response.json()["fact"]["embedding_state"] == "done"
    revision = Revision.objects.get(pk=response.json()["fact"]["revision_id"])
    assert revision.embedding_model == HASHING_MODEL
    assert revision.embedding is not None
    assert sent == []


def test_a_slow_embedder_leaves_the_revision_pending_and_queues_it(
    api, world, settings, http_embedder, sent, django_capture_on_commit_callbacks
):
    # given an embedder slower than the write budget
    settings.EMBED_BUDGET_MS = 50
    http_embedder.script = [Reply(delay_seconds=1.5, body={"data": []})]
    # when a fact is written
    started = time.monotonic()
    with django_capture_on_commit_callbacks(execute=True):
        response = create(api, world.admin.headers, "prefers window seats")
    elapsed = time.monotonic() - started
    # then the write did not wait for it, and the revision is pending and queued
    assert response.status_code == 201
    assert elapsed < 1.2
    assert response.json()["fact"]["embedding_state"] == "pending"
    revision_id = response.json()["fact"]["revision_id"]
    assert sent == [[revision_id]]
    # and when the task runs with the embedder answering, it embeds it, once
    assert embed_revisions.run([revision_id], tenant_id=str(world.tenant.id)) == 1
    assert embed_revisions.run([revision_id], tenant_id=str(world.tenant.id)) == 0
    revision = Revision.objects.get(pk=revision_id)
    assert revision.embedding_state == EmbeddingState.DONE
    assert revision.embedding_model == "remote-model"


def test_a_failing_embedder_never_fails_the_write(
    api, world, http_embedder, sent, django_capture_on_commit_callbacks
):
    # given an embedder that answers 500
    http_embedder.default = lambda payload: Reply(status=500, body={"error": "down"})
    # when a fact is written
    with django_capture_on_commit_callbacks(execute=True):
        response = create(api, world.admin.headers, "allergic to peanuts")
    # then it is stored, marked failed and queued
    assert response.status_code == 201
    assert response.json()["fact"]["embedding_state"] == "failed"
    revision_id = response.json()["fact"]["revision_id"]
    assert sent == [[revision_id]]
    # and the task, while the embedder is still down, raises for a retry and leaves it failed
    with pytest.raises(EmbeddingFailed):
        embed_revisions.run([revision_id], tenant_id=str(world.tenant.id))
    assert Revision.objects.get(pk=revision_id).embedding_state == EmbeddingState.FAILED
    # and once the embedder is back, the task embeds it
    http_embedder.default = well_formed
    assert embed_revisions.run([revision_id], tenant_id=str(world.tenant.id)) == 1
    assert Revision.objects.get(pk=revision_id).embedding_state == EmbeddingState.DONE


def test_a_misconfigured_embedder_never_fails_the_write(api, world, settings, sent):
    settings.EMBEDDER = "openai"
    settings.EMBEDDER_URL = ""  # the provider cannot be built
    response = create(api, world.admin.headers, "speaks Basque")
    assert response.status_code == 201
    assert response.json()["fact"]["embedding_state"] == "failed"


def test_without_an_embedder_a_revision_is_stored_with_nothing_to_wait_for(api, world, sent):
    response = create(api, world.admin.headers, "lives in Lisbon")
    assert response.status_code == 201
    assert response.json()["fact"]["embedding_state"] == "none"


def test_supersede_embeds_the_new_content_and_verify_reuses_the_vector(
    world, settings, http_embedder
):
    # given a fact embedded on write
    p = world.admin.principal
    first = services.fact_create(principal=p, type="note", content="drinks coffee").revision
    # when it is superseded with new content
    second = services.fact_supersede(
        principal=p, fact_id=first.fact_id, content="drinks tea now"
    ).revision
    # then the new revision is embedded from its own text
    assert second.embedding_state == EmbeddingState.DONE
    assert [r["json"]["input"] for r in http_embedder.requests] == [
        ["drinks coffee"],
        ["drinks tea now"],
    ]
    # and when it is verified, the same text keeps the same vector without asking the embedder
    third = services.fact_verify(principal=p, fact_id=first.fact_id).revision
    assert len(http_embedder.requests) == 2
    assert third.embedding_state == EmbeddingState.DONE
    second.refresh_from_db()
    assert list(third.embedding) == list(second.embedding)
    assert third.embedding_model == "remote-model"


def _planted(world: Any, n: int) -> list[Revision]:
    p = world.admin.principal
    return [
        services.fact_create(principal=p, type="note", content=f"fact number {i}").revision
        for i in range(n)
    ]


@pytest.fixture
def provider_calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The texts of each call to the hashing embedder; a text containing "refused" fails it."""
    calls: list[list[str]] = []
    real = HashingEmbedder.embed

    def recorded(self: HashingEmbedder, texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        if any("refused" in t for t in texts):
            raise EmbeddingFailed("the provider refuses one of these texts")
        return real(self, texts)

    monkeypatch.setattr(HashingEmbedder, "embed", recorded)
    return calls


def _waiting(world: Any, texts: list[str]) -> list[str]:
    """Revisions the write path left pending (no budget), as ids."""
    p = world.admin.principal
    return [
        str(services.fact_create(principal=p, type="note", content=text).revision.pk)
        for text in texts
    ]


def test_one_embed_task_embeds_the_tenants_waiting_revisions_in_one_call(
    world, other_world, settings, sent, provider_calls
):
    # given five writes left pending by a backlog (each queued its own task), and one of
    # another tenant
    settings.EMBEDDER = "hashing"
    settings.EMBED_BUDGET_MS = 0
    ids = _waiting(world, [f"fact number {i}" for i in range(5)])
    theirs = _waiting(other_world, ["not theirs to take"])
    assert set(
        Revision.objects.filter(pk__in=ids + theirs).values_list("embedding_state", flat=True)
    ) == {EmbeddingState.PENDING}
    # when the first write's task runs
    done = embed_revisions.run([ids[0]], tenant_id=str(world.tenant.id))
    # then one provider call embedded all five, and the other tenant's revision still waits
    assert done == 5
    assert provider_calls == [[f"fact number {i}" for i in range(5)]]
    assert set(Revision.objects.filter(pk__in=ids).values_list("embedding_state", flat=True)) == {
        EmbeddingState.DONE
    }
    assert Revision.objects.get(pk=theirs[0]).embedding_state == EmbeddingState.PENDING
    # and the other writes' tasks find nothing left, and call no provider
    for i in ids[1:]:
        assert embed_revisions.run([i], tenant_id=str(world.tenant.id)) == 0
    assert len(provider_calls) == 1


def test_a_text_the_provider_refuses_holds_back_no_other_task(
    world, settings, sent, provider_calls
):
    # given two waiting revisions, one of them a text the provider refuses
    settings.EMBEDDER = "hashing"
    settings.EMBED_BUDGET_MS = 0
    good, bad = _waiting(world, ["likes green tea", "refused text"])
    # when the good one's task runs: the topped-up call fails, so it is tried alone
    assert embed_revisions.run([good], tenant_id=str(world.tenant.id)) == 1
    assert provider_calls == [["likes green tea", "refused text"], ["likes green tea"]]
    # then the good one is embedded, and the other still waits for its own task, unmarked
    assert Revision.objects.get(pk=good).embedding_state == EmbeddingState.DONE
    assert Revision.objects.get(pk=bad).embedding_state == EmbeddingState.PENDING
    # and that task fails for a retry, marking only its own revision failed
    with pytest.raises(EmbeddingFailed):
        embed_revisions.run([bad], tenant_id=str(world.tenant.id))
    assert Revision.objects.get(pk=bad).embedding_state == EmbeddingState.FAILED


def test_reembed_moves_every_current_revision_to_the_configured_model(world, other_world, settings):
    # given revisions with no vector, and with another model's vector, in two tenants
    mine = _planted(world, 3)
    theirs = _planted(other_world, 2)
    Revision.objects.filter(pk=mine[0].pk).update(embedding_model="old-model")
    settings.EMBEDDER = "hashing"
    # when reembed runs for one tenant, in batches of two
    out = io.StringIO()
    call_command("reembed", tenant=str(world.tenant.id), batch=2, stdout=out)
    # then that tenant's revisions all carry the hashing model, the other tenant's do not
    assert "3 revision(s) to embed" in out.getvalue()
    assert "3/3" in out.getvalue()
    assert set(
        Revision.objects.filter(pk__in=[r.pk for r in mine]).values_list(
            "embedding_model", "embedding_state"
        )
    ) == {(HASHING_MODEL, EmbeddingState.DONE)}
    assert not Revision.objects.filter(pk__in=[r.pk for r in theirs], embedding__isnull=False)
    # and a second run finds nothing left to do
    again = io.StringIO()
    call_command("reembed", tenant=str(world.tenant.id), stdout=again)
    assert "0 revision(s) to embed" in again.getvalue()


def test_an_interrupted_reembed_resumes_where_it_stopped(world, settings, monkeypatch):
    # given five unembedded revisions and an embedder that dies after its first batch
    _planted(world, 5)
    settings.EMBEDDER = "hashing"
    calls = {"n": 0}
    real = HashingEmbedder.embed

    def flaky(self: HashingEmbedder, texts: list[str]) -> list[list[float]]:
        calls["n"] += 1
        if calls["n"] > 1:
            raise EmbeddingFailed("went away")
        return real(self, texts)

    monkeypatch.setattr(HashingEmbedder, "embed", flaky)
    # when reembed runs in batches of two, it stops with a clear error after one batch
    with pytest.raises(CommandError, match="Run the command again to resume"):
        call_command("reembed", batch=2, stdout=io.StringIO())
    assert Revision.objects.filter(embedding_model=HASHING_MODEL).count() == 2
    # and when it runs again with the embedder back, it embeds only what is left
    monkeypatch.undo()
    settings.EMBEDDER = "hashing"
    out = io.StringIO()
    call_command("reembed", batch=2, stdout=out)
    assert "3 revision(s) to embed" in out.getvalue()
    assert Revision.objects.filter(embedding_model=HASHING_MODEL).count() == 5


def test_reembed_without_an_embedder_says_so(db):
    with pytest.raises(CommandError, match="No embedder"):
        call_command("reembed", stdout=io.StringIO())


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_embeds_the_revisions_the_write_path_left_pending(
    tmp_path, monkeypatch, settings, worker_broker
):
    # given a revision written while the budget allowed no embedding in the write
    settings.EMBEDDER = "hashing"
    settings.EMBED_BUDGET_MS = 0
    tenant = factories.tenant_create()
    admin = factories.admin_key_create(tenant)
    with monkeypatch.context() as patched:
        patched.setattr(embed_revisions, "apply_async", lambda *_, **__: None)  # queued below
        revision = services.fact_create(
            principal=admin.principal, type="note", content="owns a red bicycle"
        ).revision
    assert revision.embedding_state == EmbeddingState.PENDING
    # and a worker process with the hashing embedder
    monkeypatch.setenv("KINDMEM_EMBEDDER", "hashing")
    worker = _start_worker(tmp_path, worker_broker.url)
    try:
        # when the task is queued on the broker
        embed_revisions.apply_async(
            args=[[str(revision.pk)]],
            kwargs={"tenant_id": str(tenant.id)},
            connection=worker_broker.connection,
        )
        # then the worker embeds it
        deadline = time.monotonic() + 60
        while not Revision.objects.filter(pk=revision.pk, embedding__isnull=False).exists():
            assert worker.poll() is None, worker.stderr.read().decode() if worker.stderr else ""
            assert time.monotonic() < deadline, "the worker did not embed within 60 s"
            time.sleep(0.2)
        done = Revision.objects.get(pk=revision.pk)
        assert done.embedding_model == HASHING_MODEL
        assert done.embedding_state == EmbeddingState.DONE
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)


@pytest.mark.django_db(transaction=True)
def test_a_write_while_the_broker_is_down_answers_201_and_the_backlog_sweep_embeds_it(
    api, world, settings, dead_broker, caplog
):
    # given a write path that leaves every revision to the task, and a broker that is down
    settings.EMBEDDER = "hashing"
    settings.EMBED_BUDGET_MS = 0
    api.raise_request_exception = False
    # when a fact is written (its transaction commits, then its task's publish fails)
    started = time.monotonic()
    response = create(api, world.admin.headers, "keeps bees on the roof")
    elapsed = time.monotonic() - started
    # then the write answers as usual, soon, pending, with the failed publish logged
    assert response.status_code == 201, response.content
    assert elapsed < DEAD_BROKER_WITHIN_SECONDS
    assert response.json()["fact"]["embedding_state"] == "pending"
    revision_id = response.json()["fact"]["revision_id"]
    assert publish_warned(caplog, "facts.tasks.embed_revisions", revision_id)
    # and when beat runs the backlog sweep, it embeds the revision
    assert embed_backlog() == 1
    revision = Revision.objects.get(pk=revision_id)
    assert revision.embedding_state == EmbeddingState.DONE
    assert revision.embedding_model == HASHING_MODEL
    assert embed_backlog() == 0
