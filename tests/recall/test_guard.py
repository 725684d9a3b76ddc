"""The recall guard in SQL equals `is_recall_readable_by`, the seed's `isRecallReadableBy`,
alone and narrowed to a caller's readers."""

from __future__ import annotations

import itertools
import uuid
from datetime import timedelta

from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kindmem.access import Readers
from recall.models import Conversation, Message
from recall.search import temporal_leg
from retrieval.temporal import Window
from tests import factories
from tests.oracles import RecallRow, is_recall_readable_by

# ---- the Python reference, clause by clause (the seed's cases) ------------------------

P, Q = str(uuid.uuid4()), str(uuid.uuid4())
VECTOR = [1.0] + [0.0] * 383
U = str(uuid.uuid4())


def test_all_reads_every_conversation():
    assert is_recall_readable_by(RecallRow("t", P, "a", U), Readers(all=True))


def test_a_conversation_outside_the_readers_projects_is_never_readable():
    row = RecallRow("t", P, "a")
    assert not is_recall_readable_by(
        row, Readers(project_ids=frozenset({Q}), participant_ids=frozenset({"a"}))
    )


def test_the_project_alone_does_not_open_a_persons_conversation():
    assert not is_recall_readable_by(RecallRow("t", P, "a"), Readers(project_ids=frozenset({P})))


def test_its_end_user_reads_it():
    readers = Readers(project_ids=frozenset({P}), participant_ids=frozenset({"a"}))
    assert is_recall_readable_by(RecallRow("t", P, "a"), readers)


def test_the_kindgi_user_reads_it_only_when_there_is_no_end_user():
    readers = Readers(project_ids=frozenset({P}), user_ids=frozenset({U}))
    assert is_recall_readable_by(RecallRow("t", P, None, U), readers)
    assert not is_recall_readable_by(RecallRow("t", P, "a", U), readers)


def test_being_in_the_conversation_reads_it():
    readers = Readers(project_ids=frozenset({P}), thread_ids=frozenset({"t"}))
    assert is_recall_readable_by(RecallRow("t", P, "a"), readers)
    assert not is_recall_readable_by(RecallRow("t2", P, "a"), readers)


def test_acting_for_every_end_user_of_the_project_reads_it():
    readers = Readers(on_behalf_of_project_ids=frozenset({P}))
    assert is_recall_readable_by(RecallRow("t", P, "a"), readers)
    assert not is_recall_readable_by(RecallRow("t", Q, "a"), readers)


def test_acting_for_every_end_user_opens_no_kindgi_users_own_conversation():
    # an app key's readers: its projects, on behalf of all their end users (kindmem.access)
    app = Readers(project_ids=frozenset({P}), on_behalf_of_project_ids=frozenset({P}))
    # a Kindgi user's own (no end user): not the app's, against the seed (DESIGN rule 1)
    assert not is_recall_readable_by(RecallRow("t", P, None, U), app)
    # an end user's is the app's, whichever Kindgi user its turns also acted for
    assert is_recall_readable_by(RecallRow("t", P, "a", U), app)
    # and the user still reads their own, in the same project
    user = Readers(project_ids=frozenset({P}), user_ids=frozenset({U}))
    assert is_recall_readable_by(RecallRow("t", P, None, U), user)


def test_a_conversation_without_project_opens_only_by_its_person_or_itself():
    assert is_recall_readable_by(RecallRow("t", None, "a"), Readers(participant_ids=frozenset("a")))
    assert is_recall_readable_by(RecallRow("t", None), Readers(thread_ids=frozenset({"t"})))
    assert not is_recall_readable_by(
        RecallRow("t", None, "a"), Readers(on_behalf_of_project_ids=frozenset({P}))
    )


def test_a_conversation_naming_no_person_opens_from_inside_or_for_its_whole_project():
    row = RecallRow("t", P)
    assert not is_recall_readable_by(
        row, Readers(project_ids=frozenset({P}), user_ids=frozenset({U}))
    )
    assert is_recall_readable_by(row, Readers(on_behalf_of_project_ids=frozenset({P})))
    assert is_recall_readable_by(
        row, Readers(project_ids=frozenset({P}), thread_ids=frozenset({"t"}))
    )


# ---- SQL == Python on generated readers over every kind of conversation ---------------


def test_the_sql_guard_equals_the_python_reference(world):
    # given a conversation for every combination of project, end user and Kindgi user
    # (small alphabets, so that readers and rows collide often)
    p1, p2 = world.project, factories.project_create(world.tenant, world.org)
    u1, u2 = world.user, factories.user_create(world.tenant)
    rows: list[RecallRow] = []
    for n, (project, participant, user) in enumerate(
        itertools.product([None, p1, p2], [None, "a", "b"], [None, u1, u2])
    ):
        conversation = Conversation.objects.create(
            tenant=world.tenant,
            thread_id=f"t{n}",
            agent=world.agent,
            project=project,
            participant_id=participant,
            user=user,
        )
        Message.objects.create(
            tenant=world.tenant,
            conversation=conversation,
            sequence=1,
            role="user",
            text="hi",
            embedding=VECTOR,
            embedding_model="m",
        )
        rows.append(
            RecallRow(
                conversation_id=f"t{n}",
                project_id=str(project.id) if project else None,
                participant_id=participant,
                user_id=str(user.id) if user else None,
            )
        )
    today = Window(timezone.now() - timedelta(days=1), timezone.now() + timedelta(days=1))
    project_pool = [str(p1.id), str(p2.id), str(uuid.uuid4()), str(p1.id).upper(), "nope"]
    user_pool = [str(u1.id), str(u2.id), str(uuid.uuid4()), "", "x"]
    thread_pool = [r.conversation_id for r in rows[:6]] + ["t-none", ""]

    def ids(pool: list[str]) -> st.SearchStrategy[frozenset[str]]:
        return st.frozensets(st.sampled_from(pool), max_size=3)

    # any readers, and an app key's as `readers_for` makes them (its projects, on behalf of
    # their end users): over the Kindgi users' own conversations of its projects too
    any_readers = st.builds(
        Readers,
        all=st.sampled_from([False] * 9 + [True]),
        project_ids=ids(project_pool),
        org_ids=st.just(frozenset()),
        user_ids=ids(user_pool),
        participant_ids=ids(["a", "b", "c", ""]),
        thread_ids=ids(thread_pool),
        on_behalf_of_project_ids=ids(project_pool),
    )
    app_readers = ids(project_pool).map(
        lambda p: Readers(project_ids=p, on_behalf_of_project_ids=p)
    )
    readers_strategy = st.one_of(any_readers, app_readers)

    @settings(
        max_examples=400,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(readers=readers_strategy, narrowed=st.one_of(st.none(), readers_strategy))
    def check(readers: Readers, narrowed: Readers | None) -> None:
        # when the guard runs in SQL, on conversations and on their messages
        in_sql = set(
            Conversation.objects.of_tenant(world.tenant.id)
            .recall_readable_by(readers)
            .values_list("thread_id", flat=True)
        )
        messages_in_sql = set(
            Message.objects.of_tenant(world.tenant.id)
            .recall_readable_by(readers)
            .values_list("conversation__thread_id", flat=True)
        )
        # then it picks exactly the rows the Python reference admits
        expected = {r.conversation_id for r in rows if is_recall_readable_by(r, readers)}
        assert in_sql == expected
        assert messages_in_sql == expected
        # and the temporal arm's read (its own query over the guarded messages) likewise
        dated = temporal_leg(
            Message.objects.of_tenant(world.tenant.id)
            .recall_readable_by(readers)
            .select_related("conversation"),
            100,
            VECTOR,
            "m",
            today,
        )
        assert {m.conversation.thread_id for m, _ in dated} == expected
        if narrowed is None:
            return
        # and narrowed to other readers (a caller's `readers`), exactly what both may recall:
        # never a conversation the credential's readers may not
        narrowed_in_sql = set(
            Conversation.objects.of_tenant(world.tenant.id)
            .recall_readable_by(readers, narrowed_to=narrowed)
            .values_list("thread_id", flat=True)
        )
        narrowed_messages = set(
            Message.objects.of_tenant(world.tenant.id)
            .recall_readable_by(readers, narrowed_to=narrowed)
            .values_list("conversation__thread_id", flat=True)
        )
        both = {r.conversation_id for r in rows if is_recall_readable_by(r, narrowed)} & expected
        assert narrowed_in_sql == both
        assert narrowed_messages == both

    check()
