"""Whom a revision is about (`Subject`): the rows subject access and erasure find a person's
facts by.

Its foreign keys name `Fact` and `Revision` by label, since both read through it (their
QuerySets ask whether an erasure holds a subject) and import this module."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from facts.models.choices import FactSubjectKind
from kindmem.models import Tenant
from kindmem.tenant_keys import TenantForeignKey, TenantOwned


class Subject(TenantOwned):
    """Whom a revision is about: what subject access and erasure requests by person find."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    revision = TenantForeignKey("facts.Revision", on_delete=models.CASCADE, related_name="subjects")
    # Denormalized so that an erasure finds a person's facts without joining revisions.
    fact = TenantForeignKey("facts.Fact", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=20, choices=FactSubjectKind.choices)
    subject_id = models.CharField(max_length=200)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "revision", "kind", "subject_id"],
                name="subject_once_per_revision",
            ),
            models.CheckConstraint(
                condition=Q(kind__in=FactSubjectKind.values), name="subject_kind_valid"
            ),
            models.CheckConstraint(condition=~Q(subject_id=""), name="subject_id_not_empty"),
        ]
        indexes = [
            # access and erasure requests: everything about one person
            models.Index(fields=["tenant", "kind", "subject_id"], name="subject_by_person"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.subject_id}"
