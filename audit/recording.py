"""`AuditedView`: the mixin that gives every memory endpoint its one audit event.

The view runs in one transaction. On success the event is written inside it, so an event
exists exactly when the work committed; on an error the work is rolled back and a failure
event is written in a transaction of its own. Unauthenticated calls have no tenant and are not
recorded here (they change nothing).
"""

from __future__ import annotations

import logging
from contextlib import ExitStack, nullcontext
from typing import Any, ClassVar

from django.db import transaction
from django.http.response import HttpResponseBase
from rest_framework.request import Request
from rest_framework.views import APIView

from api.bearer import presented_credential
from api.errors import is_unavailable
from api.transactions import request_atomic
from audit.models import Outcome, Phase
from audit.services import AuditNote, audit_record
from kindmem.access import Principal
from kindmem.replica import reads_on_replica, written_by
from kindmem.row_security import tenant_context

logger = logging.getLogger(__name__)


class AuditedView(APIView):
    """Set `audit_kind` and `audit_phases` ({"GET": "read", "POST": "write", ...}); the handler
    fills `self.audit` (`touch(ids=..., subjects=...)`, `query_snapshot`, `project_id`)."""

    audit_kind: ClassVar[str] = "fact"
    audit_phases: ClassVar[dict[str, str]] = {}
    # A view whose reads (phases read and retrieve) write nothing but their event may run them
    # without a transaction of their own (autocommit): a BEGIN and a COMMIT fewer. Each of
    # their statements is then its own transaction. The event still exists exactly when the
    # read is answered: it is the read's last statement, committed when it returns (its
    # advisory lock held until that commit, as in a transaction: audit_record), and an error in
    # it, as any before it, is a 500 with the failure on record instead of the answer. A read
    # under READ COMMITTED takes a snapshot per statement inside a transaction too, so its
    # rows are the same. A view that writes anything else in a read leaves this off.
    reads_in_autocommit: ClassVar[bool] = False
    # The methods whose handler may read from the read replica (kindmem/replica.py): reads that
    # tolerate its lag, as search, list, get and recall do; the credential is checked before,
    # on the primary, and the event written after, on the primary.
    replica_methods: ClassVar[frozenset[str]] = frozenset()

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> HttpResponseBase:
        phase = self.audit_phases.get(request.method or "")
        if phase is None:
            return super().dispatch(request, *args, **kwargs)
        self.audit = AuditNote(phase=phase, kind=self.audit_kind)
        # No well-formed credential, nothing to do in the database: DRF answers 401 without a
        # query, so no transaction (a connection) is taken for it either.
        self._in_transaction = presented_credential(request) is not None and not (
            self.reads_in_autocommit and phase in {Phase.READ, Phase.RETRIEVE}
        )
        try:
            # services inside need no savepoint (api/transactions.py)
            with request_atomic() if self._in_transaction else nullcontext():
                response = self._dispatch_and_record(request, *args, **kwargs)
        except Exception as exc:
            # A bug (a 500): the work is rolled back; the attempt is still on record, unless
            # the database itself is what failed. Its message is the class of what went wrong,
            # never the exception's text (which may quote a row).
            try:
                # (the caller is told "The server failed to complete the request.": handler500)
                failed = f"The server failed to complete the request ({type(exc).__name__})."
                self._record_failure(request, "persistence-error", failed)
            except Exception:
                logger.exception("could not record the failed request in the audit stream")
            raise
        if response.status_code >= 400:
            data = getattr(response, "data", None)
            code = data.get("code", "") if isinstance(data, dict) else ""
            message = data.get("message", "") if isinstance(data, dict) else ""
            try:
                self._record_failure(request, code, message if isinstance(message, str) else "")
            except Exception as exc:
                if not is_unavailable(exc):
                    raise
                # the database that refused the request refuses its record too: one line
                logger.warning("a %s request's failure went unrecorded: %s", code, exc)
        return response

    def initial(self, request: Any, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        principal = self._principal()
        if request.method in self.replica_methods and principal is not None:
            self._on_replica = ExitStack()
            self._on_replica.enter_context(reads_on_replica(principal))

    def finalize_response(self, request: Any, response: Any, *args: Any, **kwargs: Any) -> Any:
        on_replica: ExitStack | None = getattr(self, "_on_replica", None)
        if on_replica is not None:
            del self._on_replica
            on_replica.close()
        return super().finalize_response(request, response, *args, **kwargs)

    def _dispatch_and_record(self, request: Any, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = super().dispatch(request, *args, **kwargs)
        principal = self._principal()
        if response.status_code >= 400:
            if self._in_transaction:
                transaction.set_rollback(True)
        elif principal is not None:
            if self.audit.phase not in {Phase.READ, Phase.RETRIEVE}:
                written_by(principal)  # its next reads see this write (kindmem/replica.py)
            audit_record(
                principal=principal,
                note=self.audit,
                outcome=Outcome.SUCCESS,
                endpoint=self._endpoint(request),
                # a successful read wrote nothing but this event: no need to wait for the flush
                durable=self.audit.phase not in {Phase.READ, Phase.RETRIEVE},
            )
        return response

    def _record_failure(self, request: Any, error_code: str, error: str) -> None:
        principal = self._principal()
        if principal is None:
            return
        # the request's rollback also undid its tenant setting (kindmem/row_security.py)
        with tenant_context(principal.tenant_id), transaction.atomic():
            audit_record(
                principal=principal,
                note=self.audit,
                outcome=Outcome.FAILURE,
                endpoint=self._endpoint(request),
                error_code=str(error_code),
                error=error,
            )

    def _principal(self) -> Principal | None:
        request: Request | None = getattr(self, "request", None)
        auth = getattr(request, "_auth", None) if request is not None else None
        return auth if isinstance(auth, Principal) else None

    def _endpoint(self, request: Any) -> str:
        match = getattr(request, "resolver_match", None)
        return f"{request.method} {match.view_name if match else request.path}"
