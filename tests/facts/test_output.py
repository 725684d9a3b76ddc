"""FactOutput renders each revision as its declared fields would, field by field."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework import serializers

from facts import services
from facts.models import Revision
from facts.serializers import FactOutput
from tests import factories

pytestmark = pytest.mark.django_db


def declared_rendering(revision: Revision) -> dict:
    """DRF's own rendering of FactOutput's declared fields (what the schema says)."""
    return dict(serializers.Serializer.to_representation(FactOutput(), revision))


def loaded(revision: Revision) -> Revision:
    return Revision.objects.select_related("fact").prefetch_related("subjects").get(pk=revision.pk)


def test_a_fact_with_every_field_set_renders_as_its_declared_fields(world) -> None:
    # given: a fact with a key, tags, subjects, validity, retention, a source and log causes,
    # superseded once (its first revision invalidated, the second superseding it), verified
    now = timezone.now()
    first = services.fact_create(
        principal=world.admin.principal,
        type="preference",
        content={"text": "likes tea", "nested": [1, 2.5, None, {"ü": True}]},
        scope={"project_id": str(world.project.id), "participant_id": "p-1"},
        key="drink",
        tags=["diet", "morning"],
        subjects=[
            services.SubjectInput(kind="participant", id="p-1"),
            services.SubjectInput(kind="external", id="crm:42"),
        ],
        valid_from=now - timedelta(days=3),
        valid_until=now + timedelta(days=300),
        observed_at=now - timedelta(hours=5),
        retention=services.RetentionInput(keep_days=30, keep_until=now + timedelta(days=9)),
        source={"kind": "crm", "fetched_at": "2026-01-01T00:00:00Z"},
        caused_by_log_id=["log-1", "log-2"],
    ).revision
    second = services.fact_supersede(
        principal=world.admin.principal,
        fact_id=first.fact_id,
        content="likes green tea",
        retention=services.RetentionInput(legal_hold=True),
    ).revision
    verified = services.fact_verify(
        principal=world.admin.principal, fact_id=second.fact_id
    ).revision

    # then: each revision, current or not, renders as DRF renders the declared fields
    for revision in (first, second, verified):
        fresh = loaded(revision)
        assert FactOutput(fresh).data == declared_rendering(fresh)
    assert loaded(first).invalidated_at is not None
    assert FactOutput(loaded(verified)).data["verified_by"] is not None


def test_a_run_written_fact_renders_its_run_step_as_declared(world) -> None:
    # given: a fact an agent's run wrote, with nothing optional
    run = factories.run_create(world.app, world.project, participant_id="p-2", thread_id="t-1")
    revision = services.fact_create(
        principal=run.principal,
        type="note",
        content="prefers email",
        scope={"project_id": str(world.project.id), "participant_id": "p-2", "thread_id": "t-1"},
        step_id="step-1",
        tool_call_id="call-1",
    ).revision

    # then: generated_by, trust and the empty fields render as declared
    fresh = loaded(revision)
    rendered = FactOutput(fresh).data
    assert rendered == declared_rendering(fresh)
    assert rendered["generated_by"] == {
        "run_id": str(run.run.id),
        "step_id": "step-1",
        "tool_call_id": "call-1",
    }
    assert rendered["trust"] == "unverified"


def test_search_hits_render_as_their_declared_fields(world, settings) -> None:
    from facts.search import FactSearch, fact_search
    from facts.search_views import FactSearchOutput
    from kindmem.access import readers_for

    # given: hybrid hits (a score and a rank per leg each) of facts with subjects
    settings.EMBEDDER = "hashing"
    for i in range(3):
        services.fact_create(
            principal=world.admin.principal,
            type="note",
            content=f"likes tea {i}",
            subjects=[services.SubjectInput(kind="external", id=f"crm:{i}")],
        )
    hits = fact_search(
        search=FactSearch(
            tenant_id=world.tenant.id,
            readers=readers_for(world.admin.principal),
            mode="hybrid",
            query="tea",
            top_k=10,
        )
    )
    assert len(hits) == 3

    # then: the written-out rendering is DRF's rendering of the declared fields, key for key
    # and in the same order (the same JSON)
    ours, declared = FactSearchOutput.render(hits), FactSearchOutput({"hits": hits}).data
    assert json.dumps(ours, default=str) == json.dumps(declared, default=str)
