"""The invariants the database enforces for every writer, workers included."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone
from pgvector.django import CosineDistance

from embeddings.providers import HashingEmbedder
from facts.models import Revision
from tests import factories
from tests.facts.conftest import fact_insert

pytestmark = pytest.mark.django_db


def violates(constraint: str, **kwargs: object) -> None:
    """Creating the revision fails on `constraint`, not on some other rule."""
    with pytest.raises(IntegrityError, match=constraint), transaction.atomic():
        Revision.objects.create(**kwargs)


def revision_fields(revision: Revision, **changes: object) -> dict[str, object]:
    fields = {
        "tenant_id": revision.tenant_id,
        "fact_id": revision.fact_id,
        "version": revision.version + 1,
        "content": "x",
        "content_hash": "x",
        "attributed_kind": "service",
        "attributed_id": "t",
    }
    fields.update(changes)
    return fields


def test_a_fact_has_at_most_one_current_revision(world) -> None:
    # given: a fact with a current revision
    revision = fact_insert(world.tenant)
    # when / then: a second current revision is refused by the database
    violates("one_current_revision_per_fact", **revision_fields(revision))


def test_versions_are_unique_within_a_fact(world) -> None:
    revision = fact_insert(world.tenant)
    violates(
        "revision_version_unique",
        **revision_fields(
            revision, version=1, invalidated_at=timezone.now(), invalidation_reason="superseded"
        ),
    )


def test_an_unknown_trust_is_refused(world) -> None:
    revision = fact_insert(world.tenant)
    Revision.objects.filter(pk=revision.pk).update(
        invalidated_at=timezone.now(), invalidation_reason="superseded"
    )
    violates("revision_trust_valid", **revision_fields(revision, trust="certain"))


def test_an_invalidation_names_its_reason(world) -> None:
    revision = fact_insert(world.tenant)
    with (
        pytest.raises(IntegrityError, match="revision_invalidated_with_reason"),
        transaction.atomic(),
    ):
        Revision.objects.filter(pk=revision.pk).update(invalidated_at=timezone.now())


def test_a_verified_revision_names_its_verifier(world) -> None:
    revision = fact_insert(world.tenant)
    with (
        pytest.raises(IntegrityError, match="revision_verified_names_verifier"),
        transaction.atomic(),
    ):
        Revision.objects.filter(pk=revision.pk).update(trust="verified")


def test_a_participant_fact_names_its_project(world) -> None:
    with (
        pytest.raises(IntegrityError, match="fact_participant_requires_project"),
        transaction.atomic(),
    ):
        factories.fact_create(world.tenant, participant_id="p-1")


def test_valid_from_comes_before_valid_until(world) -> None:
    now = timezone.now()
    with (
        pytest.raises(IntegrityError, match="revision_valid_from_before_until"),
        transaction.atomic(),
    ):
        fact_insert(world.tenant, valid_from=now, valid_until=now)


@pytest.mark.parametrize("confidence", [-0.1, 1.5])
def test_a_link_confidence_lies_between_0_and_1(world, confidence) -> None:
    a, b = fact_insert(world.tenant), fact_insert(world.tenant)
    with pytest.raises(IntegrityError, match="link_confidence_0_to_1"), transaction.atomic():
        factories.link_create(a.fact, b.fact, confidence=confidence)


def test_the_generated_tsvector_finds_a_revision_by_its_words(world) -> None:
    # given: revisions with search text
    tea = fact_insert(world.tenant, content={"text": "She prefers green teas"})
    fact_insert(world.tenant, content={"text": "He rides a bicycle"})
    Revision.objects.filter(pk=tea.pk).update(search_text="She prefers green teas")

    # when: the tsvector column is searched (stemmed, english)
    found = Revision.objects.filter(search_vector="tea")

    # then: the database kept the column in step with the text
    assert list(found.values_list("id", flat=True)) == [tea.id]


def test_the_embedding_column_orders_by_cosine_distance(world) -> None:
    embedder = HashingEmbedder()
    near, far = fact_insert(world.tenant), fact_insert(world.tenant)
    vectors = embedder.embed(["green tea with milk", "bicycle repair shop"])
    Revision.objects.filter(pk=near.pk).update(embedding=vectors[0], embedding_state="done")
    Revision.objects.filter(pk=far.pk).update(embedding=vectors[1], embedding_state="done")
    query = embedder.embed(["green tea"])[0]
    ranked = Revision.objects.filter(pk__in=[near.pk, far.pk]).order_by(
        CosineDistance("embedding", query)
    )
    assert [r.id for r in ranked] == [near.id, far.id]
