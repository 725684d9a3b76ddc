"""Facts as memory files (the 003 seed's format, facts/memory_files.py): exported as a zip of
`facts/<id>.md` (facts/memory_exports.py), and imported from one file or such a zip
(facts/memory_uploads.py, facts/memory_import_plan.py, facts/memory_import.py)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.errors import ValidationFailed
from api.parsers import MarkdownParser, RawBody, ZipParser
from api.serializers import ErrorOutput
from audit.recording import AuditedView
from facts import memory_exports, memory_import, memory_import_plan, memory_uploads
from facts.models import Revision
from facts.serializers import FactExportInput, FactImportInput, FactImportOutput
from facts.views import ERRORS, audit_revisions, listed_revisions
from kindmem.access import readers_for
from kindmem.permissions import principal_of


class FactExportView(AuditedView):
    """Every fact `GET /v1/facts` lists with the same filters (the guard before anything), as
    a zip of memory files, at most KINDMEM_MEMORY_FILES_MAX (so that it imports whole)."""

    audit_phases = {"GET": "read"}
    replica_methods = frozenset({"GET"})

    @extend_schema(
        parameters=[FactExportInput],
        responses={
            (200, "application/zip"): OpenApiResponse(
                OpenApiTypes.BINARY,
                description="`facts/<id>.md` per fact: `---`, the seed's IMemoryEnvelope as"
                " YAML, `---`, the content (README: Memory files).",
            ),
            **ERRORS,
        },
        operation_id="facts_export",
    )
    def get(self, request: Request) -> HttpResponse:
        params = FactExportInput(data=request.query_params.dict())
        params.is_valid(raise_exception=True)
        data = params.validated_data
        principal = principal_of(request)
        self.audit.ask(type=data.get("type"), scope=params.scope())
        most = settings.MEMORY_FILES_MAX
        # The guard is in the WHERE clause; the slice (one past the bound) is LIMIT after it.
        revisions = list(
            listed_revisions(principal, data, params.scope())
            .shown()
            .order_by("created_at", "id")[: most + 1]
        )
        if len(revisions) > most:
            raise ValidationFailed(
                f"More than {most} facts match, and an export holds at most {most}: narrow it"
                " (type, tag, key, project_id, ...).",
                details={"limit": most},
            )
        links = memory_exports.outbound_links(
            principal, readers_for(principal), [r.fact_id for r in revisions]
        )
        audit_revisions(self, revisions)
        self.audit.query_snapshot = {"filters": {k: str(v) for k, v in data.items()}}
        response = HttpResponse(
            memory_exports.facts_archive(revisions, links), content_type="application/zip"
        )
        response["Content-Disposition"] = 'attachment; filename="kindmem-facts.zip"'
        return response


class FactImportView(AuditedView):
    """Write memory files as facts of this tenant, as this credential: one file
    (`text/markdown`) or a zip of `facts/<id>.md` (`application/zip`), all or nothing."""

    audit_phases = {"POST": "write"}
    parser_classes = [ZipParser, MarkdownParser]

    @extend_schema(
        request={"application/zip": OpenApiTypes.BINARY, "text/markdown": OpenApiTypes.STR},
        parameters=[FactImportInput],
        responses={200: FactImportOutput, 413: ErrorOutput, 415: ErrorOutput, **ERRORS},
        operation_id="facts_import",
    )
    def post(self, request: Request) -> Response:
        """Per file: `created`, `unchanged` (its content is there already) or `superseded`,
        and the fact it is here; links between the imported facts made, others dropped."""
        query = FactImportInput(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        body = request.data
        if not isinstance(body, RawBody) or not body.data:
            raise ValidationFailed(
                "Send one memory file (Content-Type: text/markdown) or a zip of facts/<id>.md"
                " files (Content-Type: application/zip).",
                details={"body": ["Empty."]},
            )
        uploads = memory_uploads.uploaded_files(body.data, body.media_type)
        planned = memory_import_plan.import_plan(uploads, scope=query.scope())
        principal = principal_of(request)
        imported = memory_import.facts_import(principal=principal, planned=planned)
        written = (
            Revision.objects.of_tenant(principal.tenant_id)
            .filter(pk__in=[f.revision_id for f in imported.files])
            .shown()
            .select_related("fact")
            .prefetch_related("subjects")
        )
        audit_revisions(self, written)
        self.audit.query_snapshot = {
            "files": len(imported.files),
            "outcomes": sorted({str(f.outcome) for f in imported.files}),
        }
        return Response(FactImportOutput(imported).data)
