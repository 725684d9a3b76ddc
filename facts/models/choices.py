"""The states and kinds a fact's revisions and subjects take (their columns' choices)."""

from __future__ import annotations

from django.db import models

from kindmem.models import SubjectKind


class Trust(models.TextChoices):
    VERIFIED = "verified", "verified: a person with the right checked it"
    ASSERTED = "asserted", "asserted: an app or a person wrote it"
    UNVERIFIED = "unverified", "unverified: an agent remembered it"


class AttributionKind(models.TextChoices):
    USER = "user", "a Kindgi user"
    SERVICE = "service", "a service (an app or admin key)"
    AGENT = "agent", "an agent run"


class InvalidationReason(models.TextChoices):
    SUPERSEDED = "superseded"
    DELETED = "deleted"
    ERASED = "erased"
    EXPIRED = "expired"


class Review(models.TextChoices):
    PENDING = "pending"


class ReviewState(models.TextChoices):
    """A revision's review as the API says it (`Revision.review_state`): the `review` column
    holds `pending` only, `approved_at` the approval."""

    PENDING = "pending", "waiting for a person: no read returns it"
    APPROVED = "approved", "a reviewer approved it"


class EmbeddingState(models.TextChoices):
    PENDING = "pending", "waiting to be embedded"
    DONE = "done", "embedded"
    FAILED = "failed", "the embedder failed"
    NONE = "none", "no embedder configured when written"


class FactSubjectKind(models.TextChoices):
    PARTICIPANT = SubjectKind.PARTICIPANT.value, SubjectKind.PARTICIPANT.label
    USER = SubjectKind.USER.value, SubjectKind.USER.label
    EXTERNAL = SubjectKind.EXTERNAL.value, SubjectKind.EXTERNAL.label
