"""The console's names for approvals (`console.names`): an approval by its state, a
link to its page; `revision-approval` finds the approval of a revision (a fact page names its
revisions' approvals without importing this app)."""

from __future__ import annotations

from django.http import HttpRequest

from approvals.models import Approval
from console.names import Key, Named, change_url, register, uuids
from console.tenant_wall import console_scope


def _named(request: HttpRequest, approval: Approval) -> Named:
    return Named(
        f"review: {approval.status}",
        change_url(request, approval),
        str(approval.pk),
        state=approval.status,
    )


@register("approval")
def _approvals(request: HttpRequest, keys: set[Key]) -> dict[Key, Named]:
    wanted = uuids(keys)
    found = console_scope(request, Approval.objects.filter(pk__in=wanted)).only(
        "id", "status", "tenant_id"
    )
    return {wanted[a.pk]: _named(request, a) for a in found}


@register("revision-approval")
def _approvals_of_revisions(request: HttpRequest, keys: set[Key]) -> dict[Key, Named]:
    wanted = uuids(keys)
    found = console_scope(request, Approval.objects.filter(revision_id__in=wanted)).only(
        "id", "status", "tenant_id", "revision_id"
    )
    return {wanted[a.revision_id]: _named(request, a) for a in found}
