"""`AuditedView`: the mixin that gives every memory endpoint its one audit event.

The view runs in one transaction. On success the event is written inside it, so an event
exists exactly when the work committed; on an error the work is rolled back and a failure
event is written in a transaction of its own. Unauthenticated calls have no tenant and are not
recorded here (they change nothing).
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import transaction
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit.models import Outcome
from audit.services import AuditNote, audit_record
from kindmem.access import Principal


class AuditedView(APIView):
    """Set `audit_kind` and `audit_phases` ({"GET": "read", "POST": "write", ...}); the handler
    fills `self.audit` (`touch(ids=..., subjects=...)`, `query_snapshot`, `project_id`)."""

    audit_kind: ClassVar[str] = "fact"
    audit_phases: ClassVar[dict[str, str]] = {}

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Response:
        phase = self.audit_phases.get(request.method or "")
        if phase is None:
            return super().dispatch(request, *args, **kwargs)
        self.audit = AuditNote(phase=phase, kind=self.audit_kind)
        with transaction.atomic():
            response = super().dispatch(request, *args, **kwargs)
            principal = self._principal()
            failed = response.status_code >= 400
            if failed:
                transaction.set_rollback(True)
            elif principal is not None:
                audit_record(
                    principal=principal,
                    note=self.audit,
                    outcome=Outcome.SUCCESS,
                    endpoint=self._endpoint(request),
                )
        if failed and principal is not None:
            code = getattr(response, "data", None)
            error_code = code.get("code", "") if isinstance(code, dict) else ""
            with transaction.atomic():
                audit_record(
                    principal=principal,
                    note=self.audit,
                    outcome=Outcome.FAILURE,
                    endpoint=self._endpoint(request),
                    error_code=str(error_code),
                )
        return response

    def _principal(self) -> Principal | None:
        request: Request | None = getattr(self, "request", None)
        auth = getattr(request, "_auth", None) if request is not None else None
        return auth if isinstance(auth, Principal) else None

    def _endpoint(self, request: Any) -> str:
        match = getattr(request, "resolver_match", None)
        return f"{request.method} {match.view_name if match else request.path}"
