"""FactQuerySet.newest_about: the person page's facts part (the newest N about a person and
their count, in one statement) agrees with `about` ordered newest first, for every kind of
subject, on generated facts scoped to a person, naming them in subject rows, both or neither."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from facts.models import Fact, Subject
from kindmem.subjects import Subject as SubjectRef
from tests import factories

pytestmark = pytest.mark.django_db

PEOPLE = ["p-1", "p-2"]
# each fact: (scope person or None, thread or None, user scoped?, subject rows as (kind, id))
FACTS = st.lists(
    st.tuples(
        st.sampled_from([None, *PEOPLE]),
        st.sampled_from([None, "t-1"]),
        st.booleans(),
        st.lists(
            st.sampled_from(
                [("participant", p) for p in PEOPLE] + [("external", "ext-1"), ("user", "U")]
            ),
            max_size=3,
        ),
    ),
    max_size=12,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(facts=FACTS, limit=st.integers(min_value=1, max_value=6))
def test_the_newest_facts_about_anyone_are_abouts_newest_first_with_its_count(world, facts, limit):
    Fact.objects.filter(tenant=world.tenant).delete()
    user_id = str(world.user.pk)
    start = timezone.now()
    for i, (person, thread, user_scoped, named) in enumerate(facts):
        fact = factories.fact_create(
            world.tenant,
            org=world.org,
            project=world.project,
            participant_id=person,
            thread_id=thread,
            user=world.user if user_scoped and person is None else None,
            created_at=start - timedelta(minutes=i % 4),  # ties in time too
        )
        revision = factories.revision_create(fact, content=f"fact {i}")
        for kind, subject_id in {*named}:
            Subject.objects.create(
                tenant=world.tenant,
                revision=revision,
                fact=fact,
                kind=kind,
                subject_id=user_id if kind == "user" else subject_id,
            )
    subjects = [
        *(SubjectRef.parse("participant", p) for p in PEOPLE),
        SubjectRef.parse("external", "ext-1"),
        SubjectRef.parse("conversation", "t-1"),
        SubjectRef.user(world.user.pk),
    ]
    facts_of_tenant = Fact.objects.of_tenant(world.tenant.id)
    for subject in subjects:
        expected = list(
            facts_of_tenant.about(subject)
            .order_by("-created_at", "-pk")
            .values_list("pk", flat=True)
        )
        ids, total = facts_of_tenant.newest_about(subject, limit)
        assert (ids, total) == (expected[:limit], len(expected)), subject
