"""The run log: per run, an append-only, hash-chained list of what the agent did.

The chain's encoding is in `runlog/chain.py`; the one write path is `services.log_append`, and
the one path that changes a written row is `services.log_payloads_erase`.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from kindmem.access import Readers
from kindmem.guards import run_guard
from kindmem.holds import held_condition
from kindmem.models import Run, Tenant
from kindmem.tenant_keys import TenantForeignKey, TenantOwned
from runlog.chain import GENESIS_HASH, HASH_VERSIONS, LogKind


class LogEntryQuerySet(models.QuerySet):
    def of_run(self, run: Run) -> LogEntryQuerySet:
        return self.filter(tenant_id=run.tenant_id, run_id=run.pk)

    def readable_by(self, tenant_id: uuid.UUID, readers: Readers) -> LogEntryQuerySet:
        """Entries of runs `readers` may read (the run guard, in SQL), of no person or
        conversation an erasure in progress holds."""
        return self.filter(Q(tenant_id=tenant_id) & run_guard(readers, prefix="run__")).exclude(
            held_condition("run__")
        )

    def after(self, sequence: int) -> LogEntryQuerySet:
        return self.filter(sequence__gt=sequence).order_by("sequence")


class LogEntry(TenantOwned):
    """One step of a run. Append-only: only an erasure changes a written row (it clears
    `payload` and `payload_salt` and sets `payload_erased_at`; the hashes stay)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="log_entries")
    run = TenantForeignKey(Run, on_delete=models.CASCADE, related_name="log_entries")
    sequence = models.PositiveIntegerField(help_text="1, 2, 3, ... per run, gap-free.")
    kind = models.CharField(max_length=20, choices=LogKind.choices)
    # SQL NULL once erased (never JSON null: a payload is always an object).
    payload = models.JSONField(null=True, blank=True)
    content_hash = models.CharField(max_length=64)
    payload_salt = models.CharField(max_length=32, null=True, blank=True)
    prev_hash = models.CharField(max_length=64, default=GENESIS_HASH)
    entry_hash = models.CharField(max_length=64)
    hash_version = models.PositiveSmallIntegerField(default=2)
    payload_erased_at = models.DateTimeField(null=True, blank=True)
    # RESTRICT, not PROTECT: a run's whole log may go (its run is purged), one cause may not.
    caused_by = TenantForeignKey(
        "self",
        on_delete=models.RESTRICT,
        null=True,
        blank=True,
        related_name="caused",
        db_column="caused_by_log_id",
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = LogEntryQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "log entries"
        constraints = [
            # Also the index behind "the run's last entry" and paging by sequence.
            models.UniqueConstraint(
                fields=["tenant", "run", "sequence"], name="log_sequence_per_run"
            ),
            # Two entries naming the same predecessor would fork the chain.
            models.UniqueConstraint(
                fields=["tenant", "run", "prev_hash"], name="log_no_fork_per_run"
            ),
            models.CheckConstraint(
                condition=Q(hash_version__in=HASH_VERSIONS), name="log_hash_version_known"
            ),
            models.CheckConstraint(condition=Q(kind__in=LogKind.values), name="log_kind_known"),
            models.CheckConstraint(condition=Q(sequence__gte=1), name="log_sequence_positive"),
            models.CheckConstraint(
                condition=Q(payload_erased_at__isnull=True, payload__isnull=False)
                | Q(
                    payload_erased_at__isnull=False,
                    payload__isnull=True,
                    payload_salt__isnull=True,
                ),
                name="log_payload_present_unless_erased",
            ),
            models.CheckConstraint(
                condition=Q(hash_version=1, payload_salt__isnull=True)
                | Q(hash_version=2, payload_salt__isnull=False)
                | Q(hash_version=2, payload_erased_at__isnull=False),
                name="log_salt_matches_version",
            ),
        ]
        indexes = [
            # The console's and verify_runlog's "runs of a tenant".
            models.Index(fields=["tenant", "run"], name="log_by_tenant_run"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.sequence} {self.kind}"

    @property
    def is_erased(self) -> bool:
        return self.payload_erased_at is not None
