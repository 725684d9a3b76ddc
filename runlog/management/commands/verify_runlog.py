"""`manage.py verify_runlog [--tenant NAME_OR_ID]`: verify every run's log chain."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from kindmem.models import Run, Tenant
from runlog.models import LogEntry
from runlog.verify import verify_run


class Command(BaseCommand):
    help = (
        "Recompute the hash chain of every run's log (of one tenant, or all) and print one line "
        "per run. Exits 1 if any run fails verification."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="A tenant's name or id (default: every tenant).")

    def handle(self, *args: Any, tenant: str | None = None, **options: Any) -> None:
        runs = Run.objects.filter(
            pk__in=LogEntry.objects.values("run_id").distinct()
        ).select_related("tenant")
        if tenant:
            runs = runs.filter(tenant=self._tenant(tenant))
        failed = checked = 0
        for run in runs.order_by("tenant__name", "created_at", "id").iterator():
            result = verify_run(run)
            checked += 1
            if result.ok:
                self.stdout.write(
                    f"ok    {run.tenant.name} run {run.id}: {result.length} entries, "
                    f"head {result.head}"
                )
            else:
                failed += 1
                self.stdout.write(
                    f"FAIL  {run.tenant.name} run {run.id}: {result.length} entries, first bad "
                    f"sequence {result.first_bad_sequence} ({result.reason})"
                )
        self.stdout.write(f"{checked} runs checked, {failed} failed")
        if failed:
            raise CommandError(f"{failed} run log(s) failed verification", returncode=1)

    def _tenant(self, name_or_id: str) -> Tenant:
        try:
            found = Tenant.objects.filter(pk=uuid.UUID(name_or_id)).first()
        except ValueError:
            found = None
        found = found or Tenant.objects.filter(name=name_or_id).first()
        if found is None:
            raise CommandError(f"No tenant named or with id {name_or_id!r}.", returncode=2)
        return found
