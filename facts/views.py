"""The facts API: one view per route; parse, call a service or a QuerySet, render.

Every read starts from `Revision.objects.of_tenant(...).live().readable_by(readers)`, so a fact
the caller may not read is a 404 `fact-not-found`, exactly like a missing one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import Q
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from api.cursors import cursor_encode
from api.errors import FactNotFound
from api.parsers import BoundedJSONParser, MergePatchParser
from api.serializers import ErrorOutput
from audit.recording import AuditedView
from facts import links, services
from facts.authority import Change, check_may
from facts.link_serializers import (
    LinkChangeOutput,
    LinkCreateInput,
    LinkCreateOutput,
    LinkListInput,
    LinkTraversalOutput,
    LinkUpdateInput,
)
from facts.models import Revision, RevisionQuerySet, attach_subjects
from facts.revisions import stored_revision
from facts.serializers import (
    FactCreateInput,
    FactListInput,
    FactListOutput,
    FactOutput,
    FactPatchInput,
    FactSupersedeInput,
    FactVerifyInput,
    FactWriteOutput,
    RevisionListOutput,
    write_status,
)
from kindmem.access import Principal, Readers, readers_for
from kindmem.permissions import principal_of
from kindmem.serializers import readers_snapshot

ERRORS = {
    400: ErrorOutput,
    401: ErrorOutput,
    403: ErrorOutput,
    404: ErrorOutput,
    409: ErrorOutput,
}
DEFAULT_LIMIT = 50


def readable_revisions(
    principal: Principal, narrowed_to: Readers | None = None
) -> RevisionQuerySet:
    """The caller's tenant's revisions that its credential (and the readers it narrowed them
    to, if any) may read, ready to render."""
    return (
        Revision.objects.of_tenant(principal.tenant_id)
        .readable_by(readers_for(principal), narrowed_to=narrowed_to)
        .select_related("fact")
        .prefetch_related("subjects")
    )


def listed_revisions(
    principal: Principal, data: Mapping[str, Any], scope: dict[str, Any]
) -> RevisionQuerySet:
    """What `GET /v1/facts` lists (and `GET /v1/facts/export` exports), before its order and
    page: the readable current revisions (or those held `as_of`), valid at `valid_at`, narrowed
    by readers, type, scope keys, tag and slot key."""
    qs = readable_revisions(principal, data.get("readers")).approved()
    if "as_of" in data:
        # What was held then, of the facts still readable now: a deleted or expired fact's
        # past content is not served by asking about the past.
        qs = qs.as_of(data["as_of"]).unexpired(at=data["as_of"]).of_live_facts()
    else:
        qs = qs.current().unexpired()
    if "valid_at" in data:
        qs = qs.valid_at(data["valid_at"])
    return qs.narrowed(type=data.get("type"), scope=scope, tag=data.get("tag"), key=data.get("key"))


def audit_revisions(view: AuditedView, revisions: Iterable[Revision]) -> None:
    """Note the facts a request returned or touched, and whom they are about."""
    for revision in revisions:
        view.audit.touch(
            ids=[revision.fact_id],
            subjects=[(s.kind, s.subject_id) for s in revision.subjects.all()],
            targets=[(revision.fact.type, revision.fact.scope)],
        )
        view.audit.project_id = view.audit.project_id or revision.fact.project_id


def _fact_uuid(fact_id: str) -> uuid.UUID:
    try:
        return uuid.UUID(str(fact_id))
    except ValueError:
        raise FactNotFound() from None


def _write_response(
    view: AuditedView, result: services.WriteResult, created_status: int
) -> Response:
    code = status.HTTP_200_OK if result.outcome == services.Outcome.UNCHANGED else created_status
    # as stored (JSON as the database keeps it): read in the write's own round trip where it
    # could be, else now
    revision = (
        result.stored or stored_revision(result.revision.tenant_id, result.revision.pk).first()
    )
    attach_subjects([revision])
    audit_revisions(view, [revision])
    view.audit.query_snapshot = {"outcome": result.outcome, "version": revision.version}
    body = {
        "outcome": result.outcome,
        "status": write_status(revision),
        "fact": revision,
        "approval_id": result.approval_id,
        "review": {"reasons": result.reasons} if result.reasons else None,
    }
    return Response(FactWriteOutput(body).data, code)


class FactListView(AuditedView):
    """List the facts the caller may read (each fact's current revision), or write a new one."""

    audit_phases = {"GET": "read", "POST": "write"}
    replica_methods = frozenset({"GET"})

    @extend_schema(
        parameters=[FactListInput],
        responses={200: FactListOutput, **ERRORS},
        operation_id="facts_list",
    )
    def get(self, request: Request) -> Response:
        params = FactListInput(data=request.query_params.dict())
        params.is_valid(raise_exception=True)
        data = params.validated_data
        principal = principal_of(request)
        self.audit.ask(type=data.get("type"), scope=params.scope())
        qs = listed_revisions(principal, data, params.scope())
        if "cursor" in data:
            at, ident = data["cursor"]
            qs = qs.filter(Q(created_at__lt=at) | Q(created_at=at, id__lt=ident))
        limit = data.get("limit", DEFAULT_LIMIT)
        # The guard is in the WHERE clause above; the slice becomes LIMIT after it.
        page = list(qs.order_by("-created_at", "-id")[: limit + 1])
        next_cursor = cursor_encode(page[limit - 1]) if len(page) > limit else None
        audit_revisions(self, page[:limit])
        self.audit.query_snapshot = {
            "filters": {
                k: readers_snapshot(v) if k == "readers" else str(v)
                for k, v in data.items()
                if k not in {"limit", "cursor"}
            },
            "limit": limit,
        }
        return Response(FactListOutput({"facts": page[:limit], "next_cursor": next_cursor}).data)

    @extend_schema(
        request=FactCreateInput, responses={201: FactWriteOutput, 200: FactWriteOutput, **ERRORS}
    )
    def post(self, request: Request) -> Response:
        body = FactCreateInput(data=request.data)
        body.is_valid(raise_exception=True)
        kwargs = body.service_kwargs()
        self.audit.ask(type=kwargs["type"], scope=kwargs.get("scope", {}))
        result = services.fact_create(principal=principal_of(request), **kwargs)
        return _write_response(self, result, status.HTTP_201_CREATED)


class FactDetailView(AuditedView):
    """One fact's current revision; patch it (a JSON merge patch, the next revision); or delete
    it (retention permitting)."""

    audit_phases = {"GET": "read", "PATCH": "write", "DELETE": "delete"}
    replica_methods = frozenset({"GET"})
    parser_classes = [MergePatchParser]  # only PATCH has a body: RFC 7386's media type

    @extend_schema(responses={200: FactOutput, **ERRORS})
    def get(self, request: Request, fact_id: str) -> Response:
        self.audit.touch(ids=[fact_id])
        revision = (
            readable_revisions(principal_of(request))
            .live()
            .filter(fact_id=_fact_uuid(fact_id))
            .first()
        )
        if revision is None:
            raise FactNotFound()
        audit_revisions(self, [revision])
        return Response(FactOutput(revision).data)

    @extend_schema(
        request={
            "application/merge-patch+json": {
                "type": "object",
                "description": (
                    "A JSON merge patch (RFC 7386) of the fact's `content`, `valid_from` and"
                    " `valid_until`: `null` deletes a key, arrays replace, objects merge. A"
                    " type's write policy may name the content fields a patch can change."
                ),
                "properties": {
                    "content": {},
                    "valid_from": {"type": "string", "format": "date-time", "nullable": True},
                    "valid_until": {"type": "string", "format": "date-time", "nullable": True},
                },
                "additionalProperties": False,
            }
        },
        parameters=[FactPatchInput],
        responses={201: FactWriteOutput, 200: FactWriteOutput, 415: ErrorOutput, **ERRORS},
    )
    def patch(self, request: Request, fact_id: str) -> Response:
        """Write the next revision from a merge patch of this one (review, retention, holds
        and `expected_version` as for supersede)."""
        self.audit.touch(ids=[fact_id])
        query = FactPatchInput(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        result = services.fact_patch(
            principal=principal_of(request),
            fact_id=_fact_uuid(fact_id),
            patch=request.data,
            expected_version=query.validated_data.get("expected_version"),
        )
        return _write_response(self, result, status.HTTP_201_CREATED)

    @extend_schema(responses={200: FactWriteOutput, **ERRORS})
    def delete(self, request: Request, fact_id: str) -> Response:
        self.audit.touch(ids=[fact_id])
        revision = services.fact_delete(principal=principal_of(request), fact_id=fact_id)
        return _write_response(
            self, services.WriteResult(revision, services.Outcome.DELETED), status.HTTP_200_OK
        )


class FactRevisionsView(AuditedView):
    """A fact's history, newest first: every revision the caller may read, superseded ones
    included (never one pending review or past its `expires_at`).

    Only a fact that is itself readable now has a history: one deleted, expired, erased,
    rejected or still pending review is a 404 `fact-not-found`, exactly like its detail and
    like a fact that never existed (`RevisionQuerySet.of_live_facts`). Its history is content,
    and a read returns only what DESIGN rule 3 allows; staff see ended facts in the console."""

    audit_phases = {"GET": "read"}

    @extend_schema(responses={200: RevisionListOutput, **ERRORS})
    def get(self, request: Request, fact_id: str) -> Response:
        self.audit.touch(ids=[fact_id])
        revisions = list(
            readable_revisions(principal_of(request))
            .of_live_facts()
            .approved()
            .unexpired()
            .filter(fact_id=_fact_uuid(fact_id))
            .order_by("-version")
        )
        if not revisions:
            raise FactNotFound()
        audit_revisions(self, revisions)
        return Response(RevisionListOutput({"revisions": revisions}).data)


class FactSupersedeView(AuditedView):
    """Write the fact's next revision (version + 1); the current one becomes `superseded`."""

    audit_phases = {"POST": "write"}

    @extend_schema(
        request=FactSupersedeInput,
        responses={201: FactWriteOutput, 200: FactWriteOutput, **ERRORS},
    )
    def post(self, request: Request, fact_id: str) -> Response:
        self.audit.touch(ids=[fact_id])
        body = FactSupersedeInput(data=request.data)
        body.is_valid(raise_exception=True)
        result = services.fact_supersede(
            principal=principal_of(request), fact_id=_fact_uuid(fact_id), **body.service_kwargs()
        )
        return _write_response(self, result, status.HTTP_201_CREATED)


class FactVerifyView(AuditedView):
    """Verify the fact (a tenant admin or a Kindgi user): a new revision, `trust: verified`."""

    audit_phases = {"POST": "write"}

    @extend_schema(
        request=FactVerifyInput, responses={201: FactWriteOutput, 200: FactWriteOutput, **ERRORS}
    )
    def post(self, request: Request, fact_id: str) -> Response:
        self.audit.touch(ids=[fact_id])
        principal = principal_of(request)
        check_may(principal, ("trust", Change.SET))  # before the body is read
        body = FactVerifyInput(data=request.data)
        body.is_valid(raise_exception=True)
        result = services.fact_verify(
            principal=principal, fact_id=_fact_uuid(fact_id), **body.validated_data
        )
        return _write_response(self, result, status.HTTP_201_CREATED)


class FactLinksView(AuditedView):
    """The facts reachable along links (BFS, cycle-safe, guarded); or link this fact to another."""

    audit_phases = {"GET": "read", "POST": "write"}

    @extend_schema(
        parameters=[LinkListInput],
        responses={200: LinkTraversalOutput, **ERRORS},
    )
    def get(self, request: Request, fact_id: str) -> Response:
        self.audit.touch(ids=[fact_id])
        params = LinkListInput(data=request.query_params.dict())
        params.is_valid(raise_exception=True)
        reached = links.link_traverse(
            principal=principal_of(request), fact_id=_fact_uuid(fact_id), **params.traverse_kwargs()
        )
        audit_revisions(self, [r.revision for r in reached])
        self.audit.query_snapshot = {k: str(v) for k, v in params.validated_data.items()}
        return Response(LinkTraversalOutput({"reached": reached}).data)

    @extend_schema(
        request=LinkCreateInput, responses={201: LinkCreateOutput, 200: LinkCreateOutput, **ERRORS}
    )
    def post(self, request: Request, fact_id: str) -> Response:
        self.audit.touch(ids=[fact_id])
        body = LinkCreateInput(data=request.data)
        body.is_valid(raise_exception=True)
        data: dict[str, Any] = dict(body.validated_data)
        link, created = links.link_create(
            principal=principal_of(request),
            source_id=_fact_uuid(fact_id),
            target_id=data.pop("target"),
            **data,
        )
        self.audit.touch(ids=[link.source_id, link.target_id])
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(LinkCreateOutput({"created": created, "link": link}).data, code)


class FactLinkView(AuditedView):
    """One link out of a fact: change its confidence, provenance or validity, or remove it."""

    audit_phases = {"PATCH": "write", "DELETE": "delete"}
    parser_classes = [BoundedJSONParser, MergePatchParser]

    @extend_schema(request=LinkUpdateInput, responses={200: LinkChangeOutput, **ERRORS})
    def patch(self, request: Request, fact_id: str, link_id: str) -> Response:
        """Fields left out are kept; `null` clears one (JSON or a merge patch alike)."""
        self.audit.touch(ids=[fact_id])
        body = LinkUpdateInput(data=request.data)
        body.is_valid(raise_exception=True)
        link = links.link_update(
            principal=principal_of(request),
            fact_id=_fact_uuid(fact_id),
            link_id=link_id,
            changes=dict(body.validated_data),
        )
        self.audit.touch(ids=[link.target_id])
        return Response(LinkChangeOutput({"link": link}).data)

    @extend_schema(responses={200: LinkChangeOutput, **ERRORS})
    def delete(self, request: Request, fact_id: str, link_id: str) -> Response:
        self.audit.touch(ids=[fact_id])
        link = links.link_delete(
            principal=principal_of(request), fact_id=_fact_uuid(fact_id), link_id=link_id
        )
        self.audit.touch(ids=[link.target_id])
        return Response(LinkChangeOutput({"link": link}).data)
