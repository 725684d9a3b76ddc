"""Console reads in the audit stream: a staff member opening a page of someone's data is an
event like an API read, so that person's access export lists which staff looked.

The event is the API's shape (`audit_record`): phase `read`, the page's `kind` ("fact"), the
ids shown and the people they are about, principal "staff:<user id>" of kind "console", in the
tenant whose data it is (also for platform staff, who belong to none).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from django.db import transaction

from audit.models import AuditEvent, Outcome, Phase
from audit.services import Actor, AuditNote, audit_record


@transaction.atomic
def console_read_record(
    *,
    user: Any,
    tenant_id: uuid.UUID,
    kind: str,
    object_ids: Iterable[object],
    subjects: Iterable[str],
    endpoint: str,
) -> AuditEvent:
    """Record that staff member `user` read, on a console page, the rows `object_ids` of
    `tenant_id` about `subjects` ("participant:p-1", "user:<id>")."""
    note = AuditNote(phase=Phase.READ, kind=kind)
    note.touch(ids=object_ids, subjects=subjects)
    staff = Actor.of_staff(user, tenant_id)
    return audit_record(principal=staff, note=note, outcome=Outcome.SUCCESS, endpoint=endpoint)
