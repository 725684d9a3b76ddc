"""Thread ownership: a thread belongs to the project and person of its first use.

A run's `thread_ids` open every fact scoped to the thread and the thread's conversation, so a
thread id must not be a capability. The rule, checked wherever a thread is named:

- a **run** (`POST /v1/runs`) may name a thread that is new, or that belongs to the same
  project and the same person as the run (its participant, else its Kindgi user, else no
  one): an app mints runs for the person whose conversation it is, a Kindgi user only for
  threads that are its own;
- a **conversation** is created for a thread on the same terms (its project and person);
- a **fact** scoped to a thread names the thread's project, and no person or the thread's.

The first of these to name a thread records it (`Thread`); a unique key settles a race.

Known gap (red team finding 7, open): thread ids are one namespace per tenant, so a refused
claim tells the caller that the id is taken, by another project or person, where a fresh id
gets 201. Answering both alike needs thread ids (`Thread`, `Conversation`) keyed per project,
not a different refusal here.
"""

from __future__ import annotations

import uuid

from api.errors import Forbidden, InvalidFact
from kindmem.erasure import BatchResult, ErasureTarget, StepPreview
from kindmem.models import Thread


def thread_person(
    participant_id: str | None, user_id: uuid.UUID | str | None
) -> tuple[str, str] | None:
    """Whose a thread (or a conversation) is: its participant, else its Kindgi user."""
    if participant_id:
        return ("participant", participant_id)
    if user_id:
        return ("user", str(user_id))
    return None


def _owner(
    *,
    tenant_id: uuid.UUID,
    thread_id: str,
    project_id: uuid.UUID | str,
    participant_id: str | None,
    user_id: uuid.UUID | str | None,
) -> Thread:
    """The thread's record, created for these containers if the thread is new."""
    Thread.objects.bulk_create(
        [
            Thread(
                tenant_id=tenant_id,
                thread_id=thread_id,
                project_id=project_id,
                participant_id=participant_id or None,
                user_id=None if participant_id else (user_id or None),
            )
        ],
        ignore_conflicts=True,
    )
    return Thread.objects.get(tenant_id=tenant_id, thread_id=thread_id)


def thread_claim(
    *,
    tenant_id: uuid.UUID,
    thread_id: str,
    project_id: uuid.UUID | str,
    participant_id: str | None = None,
    user_id: uuid.UUID | str | None = None,
) -> Thread:
    """For a run or a conversation: the thread is new, or it belongs to exactly this project
    and person; else `forbidden` (nothing is written)."""
    thread = _owner(
        tenant_id=tenant_id,
        thread_id=thread_id,
        project_id=project_id,
        participant_id=participant_id,
        user_id=user_id,
    )
    same_project = str(thread.project_id) == str(project_id)
    if not (
        same_project
        and thread_person(thread.participant_id, thread.user_id)
        == thread_person(participant_id, user_id)
    ):
        raise Forbidden(
            "That thread belongs to another conversation: a run or a conversation names only "
            "threads of its own project and person.",
            details={"thread_id": [thread_id]},
        )
    return thread


def thread_check_fact(
    *,
    tenant_id: uuid.UUID,
    thread_id: str,
    project_id: uuid.UUID | str | None,
    participant_id: str | None = None,
    user_id: uuid.UUID | str | None = None,
) -> None:
    """For a fact scoped to a thread: it names the thread's project, and no person or the
    thread's; a new thread is recorded for the fact's containers."""
    if project_id is None:
        raise InvalidFact(
            "A thread's fact names its project.",
            details={"scope.thread_id": ["Needs scope.project_id."]},
        )
    thread = _owner(
        tenant_id=tenant_id,
        thread_id=thread_id,
        project_id=project_id,
        participant_id=participant_id,
        user_id=user_id,
    )
    person = thread_person(participant_id, user_id)
    owner = thread_person(thread.participant_id, thread.user_id)
    if str(thread.project_id) != str(project_id) or (person is not None and person != owner):
        raise Forbidden(
            "That thread belongs to another conversation: a fact names only a thread of its "
            "own project and person.",
            details={"scope.thread_id": [thread_id]},
        )


def erase_batch(target: ErasureTarget, limit: int) -> BatchResult:
    """The erasure step: the records of the person's threads (or of the conversation) go,
    once the steps before have erased what was in them."""
    ids = list(
        Thread.objects.filter(tenant_id=target.tenant_id)
        .about(target.subject)
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    Thread.objects.filter(pk__in=ids).delete()
    return BatchResult(erased=[f"thread:{i}" for i in ids], done=len(ids) < limit)


def preview(target: ErasureTarget) -> StepPreview:
    threads = Thread.objects.filter(tenant_id=target.tenant_id).about(target.subject)
    return StepPreview(counts={"thread": threads.count()})
