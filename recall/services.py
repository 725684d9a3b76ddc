"""Writes of conversations and messages: appending, with the texts embedded within the write
budget (`embeddings.budget`); what it could not embed is left to `recall.tasks.embed_messages`."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from api.background import enqueue_on_commit
from api.errors import Forbidden, NotFound, ValidationFailed
from embeddings.budget import embed_within_budget
from kindmem.access import Principal, PrincipalKind, readers_for
from kindmem.holds import assert_not_held
from kindmem.models import Agent, Project
from kindmem.services import acting_check
from kindmem.subjects import persons_of
from kindmem.threads import thread_claim
from recall.appended import after_append
from recall.models import Conversation, Message, Role
from recall.tasks import embed_messages

MAX_TEXT_CHARS = 20_000
# What an app appending to a conversation it may not write to, or to one that does not exist
# without naming what creates it, is answered alike.
NO_SUCH_CONVERSATION = (
    "No such conversation: an app's first write to a conversation creates it, naming agent_id "
    "and project_id."
)
MAX_BATCH = 100


@dataclass(frozen=True)
class NewMessage:
    role: str
    text: str
    # kept with the message and returned as given, never indexed (`Message.data`)
    data: Any = None


@dataclass(frozen=True)
class ConversationStart:
    """What an app credential names when its first write creates a conversation."""

    agent_id: str | None = None
    project_id: uuid.UUID | None = None
    participant_id: str | None = None
    user_id: uuid.UUID | None = None
    segments: tuple[str, ...] | None = None


def conversation_append(
    *,
    principal: Principal,
    conversation_id: str,
    messages: list[NewMessage],
    start: ConversationStart,
) -> tuple[Conversation, list[Message]]:
    """Append `messages` to a conversation (created on its first write), in order, with
    server-assigned, gap-free sequences.

    A run writes only to its own conversation (its `thread_id`), which it creates from its own
    containers; an app writes to conversations of its projects, naming agent and project when
    its write creates one, and naming only people it stands for (`acting_check`: never a
    Kindgi user). Another project's conversation, or a Kindgi user's own (the recall guard),
    is `not-found`, as a missing one is. Refused,
    with nothing written, while an erasure holds the person or the conversation. Texts are
    embedded BEFORE the transaction, so no network call is made under the conversation's row
    lock.
    """
    if not messages:
        raise ValidationFailed("Send at least one message.")
    if len(messages) > MAX_BATCH:
        raise ValidationFailed(f"At most {MAX_BATCH} messages per request.")
    if principal.kind == PrincipalKind.APP:
        # Whom the body names, before anything is looked up (so a refusal leaks no existence):
        # only people the app stands for, as when it mints a run (DESIGN rule 1).
        acting_check(
            principal=principal,
            project_id=start.project_id,
            participant_id=start.participant_id,
            user_id=start.user_id,
        )
    indexed = [i for i, m in enumerate(messages) if m.role != Role.TOOL]
    embedded = embed_within_budget([messages[i].text for i in indexed])
    vectors = embedded.vectors or []
    embeddings: dict[int, list[float]] = dict(zip(indexed, vectors, strict=True)) if vectors else {}
    model = embedded.model or ""
    conversation, rows = _append(
        principal=principal,
        conversation_id=conversation_id,
        messages=messages,
        start=start,
        embeddings=embeddings,
        model=model,
    )
    if embedded.needs_task and indexed:
        ids, tenant = [rows[i].id for i in indexed], str(conversation.tenant_id)
        # a broker that cannot be reached does not fail the write: embed_backlog embeds them
        enqueue_on_commit(embed_messages, ids, tenant_id=tenant)
    # extraction, for the agents that ask for it, as far as this writer may read and write
    after_append(conversation=conversation, principal=principal)
    return conversation, rows


@transaction.atomic
def _append(
    *,
    principal: Principal,
    conversation_id: str,
    messages: list[NewMessage],
    start: ConversationStart,
    embeddings: dict[int, list[float]],
    model: str,
) -> tuple[Conversation, list[Message]]:
    tenant_id = principal.tenant_id
    existing = Conversation.objects.filter(tenant_id=tenant_id, thread_id=conversation_id).first()
    if existing is None:
        # Create it if no one else did in the meantime; the unique key settles the race.
        Conversation.objects.bulk_create(
            [_new_conversation(principal, conversation_id, start)], ignore_conflicts=True
        )
    conversation = (
        Conversation.objects.select_for_update()
        .select_related("agent")
        .get(tenant_id=tenant_id, thread_id=conversation_id)
    )
    # Also when it was just created: a concurrent first write may have created it first.
    _check_may_write(principal, conversation, start)
    assert_not_held(
        tenant_id,
        persons_of(
            participant_id=conversation.participant_id,
            user_id=conversation.user_id,
            thread_id=conversation.thread_id,
        ),
    )
    now = timezone.now()
    first = conversation.last_sequence + 1
    rows = [
        Message(
            tenant_id=tenant_id,
            conversation=conversation,
            sequence=first + i,
            role=m.role,
            text=m.text,
            data=m.data,
            created_at=now,
            embedding=embeddings.get(i),
            embedding_model=model if i in embeddings else "",
        )
        for i, m in enumerate(messages)
    ]
    Message.objects.bulk_create(rows)
    conversation.last_sequence = first + len(messages) - 1
    conversation.save(update_fields=["last_sequence"])
    return conversation, rows


def _new_conversation(
    principal: Principal, conversation_id: str, start: ConversationStart
) -> Conversation:
    segments = list(start.segments or ())
    if principal.kind == PrincipalKind.RUN:
        run = principal.run
        assert run is not None
        if run.thread_id != conversation_id:
            raise Forbidden("A run writes only to its own conversation (its thread_id).")
        # Claimed when the run was minted; checked again, since the record may have been
        # erased with an earlier conversation of the same id.
        thread_claim(
            tenant_id=principal.tenant_id,
            thread_id=conversation_id,
            project_id=run.project_id,
            participant_id=run.participant_id,
            user_id=run.user_id,
        )
        return Conversation(
            tenant_id=principal.tenant_id,
            thread_id=conversation_id,
            agent_id=run.agent_id,
            project_id=run.project_id,
            participant_id=run.participant_id,
            user_id=run.user_id,
            segments=segments,
        )
    if principal.kind != PrincipalKind.APP:
        raise Forbidden("Only a run token or an app credential appends messages.")
    if start.agent_id is None or start.project_id is None:
        raise NotFound(NO_SUCH_CONVERSATION)  # as another project's: `_check_may_write`
    # checked before: its project is one of the app's, and it names no Kindgi user
    agent = Agent.objects.filter(tenant_id=principal.tenant_id, agent_id=start.agent_id).first()
    if agent is None:
        raise ValidationFailed("No such agent.", details={"agent_id": start.agent_id})
    if not Project.objects.filter(tenant_id=principal.tenant_id, id=start.project_id).exists():
        raise ValidationFailed("No such project.", details={"project_id": str(start.project_id)})
    thread_claim(
        tenant_id=principal.tenant_id,
        thread_id=conversation_id,
        project_id=start.project_id,
        participant_id=start.participant_id,
        user_id=start.user_id,
    )
    return Conversation(
        tenant_id=principal.tenant_id,
        thread_id=conversation_id,
        agent=agent,
        project_id=start.project_id,
        participant_id=start.participant_id,
        user_id=start.user_id,
        segments=segments,
    )


def _check_may_write(
    principal: Principal, conversation: Conversation, start: ConversationStart
) -> None:
    """An existing conversation: the writer must be in it (its run) or act for its project, and
    what the body names must agree with it (a silent mismatch would file messages wrongly)."""
    if principal.kind not in {PrincipalKind.RUN, PrincipalKind.APP}:
        raise Forbidden("Only a run token or an app credential appends messages.")
    if principal.kind == PrincipalKind.RUN:
        assert principal.run is not None
        if principal.run.thread_id != conversation.thread_id:
            raise Forbidden("A run writes only to its own conversation (its thread_id).")
    readable = Conversation.objects.filter(pk=conversation.pk).recall_readable_by(
        readers_for(principal)
    )
    if not readable.exists():
        # as a conversation that does not exist (appended to without naming agent and
        # project): an answer of its own would tell an app another project's id is taken
        raise NotFound(NO_SUCH_CONVERSATION)
    mismatched = {
        name: given
        for name, given, actual in [
            ("agent_id", start.agent_id, conversation.agent.agent_id),
            ("project_id", start.project_id, conversation.project_id),
            ("participant_id", start.participant_id, conversation.participant_id),
            ("user_id", start.user_id, conversation.user_id),
        ]
        if given is not None and given != actual
    }
    if mismatched:
        raise ValidationFailed(
            "The conversation exists with other containers than the request names.",
            details={name: str(v) for name, v in mismatched.items()},
        )


@transaction.atomic
def messages_delete(
    *, principal: Principal, conversation_id: str, sequence: int | None = None
) -> tuple[Conversation, list[Message]]:
    """Delete one message of a conversation (`sequence`), or all of them (None), and return
    what was deleted. For an agent framework's session: taking back its last item, clearing
    its history. The conversation itself stays, and its sequences are never handed out again
    (`last_sequence` is kept), so an audit event's `<conversation>#<sequence>` always names one
    message.

    Who may: whoever may append (a run its own conversation, an app its projects'), once the
    conversation is one it may recall; an unreadable or missing one is `not-found`, a held
    one `erasure-in-progress` (as appending is), and nothing is deleted.
    """
    tenant_id = principal.tenant_id
    conversation = (
        Conversation.objects.of_tenant(tenant_id)
        .recall_readable_by(readers_for(principal))
        .filter(thread_id=conversation_id)
        .select_related("agent")
        .select_for_update(of=("self",))
        .first()
    )
    if conversation is None:
        raise NotFound("No such conversation.")
    _check_may_write(principal, conversation, ConversationStart())
    assert_not_held(
        tenant_id,
        persons_of(
            participant_id=conversation.participant_id,
            user_id=conversation.user_id,
            thread_id=conversation.thread_id,
        ),
    )
    doomed = Message.objects.of_tenant(tenant_id).filter(conversation=conversation)
    if sequence is not None:
        doomed = doomed.filter(sequence=sequence)
    if sequence is None:
        doomed = doomed.only("id", "sequence")  # a whole history: only what the audit names
    else:
        doomed = doomed.only("id", "sequence", "role", "text", "data", "created_at")
    rows = list(doomed.order_by("sequence"))
    if sequence is not None and not rows:
        raise NotFound("No such message.", details={"sequence": sequence})
    Message.objects.filter(id__in=[m.id for m in rows]).delete()
    return conversation, rows
