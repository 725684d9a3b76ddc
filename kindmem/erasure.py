"""The erasure step protocol, below every app that holds personal data.

Each app erases what it holds about a subject in its own module, as a *step*: `erase_batch`
erases at most `limit` rows about the target inside the runner's transaction and says whether
anything is left; `preview` counts, per kind of row, what it would erase now and what it would
keep under legal hold, writing nothing (the erasure preview of the console and the API, and the
progress bar's total). The privacy app runs the steps in order (`privacy/erasure.py`); the
steps never import privacy.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

from kindmem.subjects import Subject


@dataclass(frozen=True)
class ErasureTarget:
    """A validated subject in one tenant."""

    tenant_id: uuid.UUID
    kind: str
    id: str

    def __post_init__(self) -> None:
        # Validated here too: a target built from a stored request must be one a request
        # could have named (a user is a UUID), or the steps would disagree on what it means.
        subject = Subject.parse(self.kind, self.id)
        object.__setattr__(self, "kind", subject.kind)
        object.__setattr__(self, "id", subject.id)

    @property
    def subject(self) -> Subject:
        return Subject(self.kind, self.id)  # type: ignore[arg-type]

    def __str__(self) -> str:
        return str(self.subject)


@dataclass
class BatchResult:
    erased: list[str]  # "<kind>:<id>" of the rows erased by this batch
    done: bool  # nothing left for this step
    held: list[dict[str, Any]] = field(default_factory=list)  # kept, and why (legal hold)


@dataclass
class StepPreview:
    """What a step would do now: rows per kind (the kinds of `BatchResult.erased`, so a
    preview and the receipt's `counts_by_kind` speak of the same things), and what it keeps."""

    counts: dict[str, int]
    held: list[dict[str, Any]] = field(default_factory=list)  # at most HELD_SHOWN
    held_count: int = 0


# A preview lists at most this many held items (it counts them all).
HELD_SHOWN = 100


class ErasureStep(Protocol):
    """What a step module provides."""

    def erase_batch(self, target: ErasureTarget, limit: int) -> BatchResult: ...

    def preview(self, target: ErasureTarget) -> StepPreview: ...
