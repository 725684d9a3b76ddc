"""The API's own routes: who am I, minting runs, and health."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.http import JsonResponse
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kindmem import services
from kindmem.access import readers_for
from kindmem.models import WorkerHeartbeat
from kindmem.permissions import CanMintRuns, principal_of
from kindmem.serializers import ErrorOutput, RunMintInput, RunMintOutput, WhoAmIOutput

ERRORS = {400: ErrorOutput, 401: ErrorOutput, 403: ErrorOutput, 404: ErrorOutput}


class WhoAmIView(APIView):
    """The caller's principal and the readers its credential grants."""

    @extend_schema(responses={200: WhoAmIOutput, **ERRORS})
    def get(self, request: Request) -> Response:
        principal = principal_of(request)
        readers = readers_for(principal)
        body = {
            "kind": principal.kind,
            "tenant_id": principal.tenant_id,
            "principal": principal.id,
            "run_id": principal.run.id if principal.run else None,
            "readers": {
                "all": readers.all,
                **{
                    name: sorted(getattr(readers, name))
                    for name in (
                        "project_ids",
                        "org_ids",
                        "user_ids",
                        "participant_ids",
                        "thread_ids",
                        "on_behalf_of_project_ids",
                    )
                },
            },
        }
        return Response(WhoAmIOutput(body).data)


class RunListView(APIView):
    """Mint a run (an app or a Kindgi user) and receive its short-lived token."""

    permission_classes = [CanMintRuns]

    @extend_schema(request=RunMintInput, responses={201: RunMintOutput, **ERRORS})
    def post(self, request: Request) -> Response:
        data = RunMintInput(data=request.data)
        data.is_valid(raise_exception=True)
        run, token = services.run_mint(principal=principal_of(request), **data.validated_data)
        return Response(
            RunMintOutput({"run": run, "token": token}).data, status=status.HTTP_201_CREATED
        )


def healthz(request: Any) -> JsonResponse:
    """Database, broker and embedder, each `ok` or why not; 503 if the database or broker fail."""
    checks: dict[str, dict[str, Any]] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        checks["database"] = {"ok": True, "pgvector": row[0] if row else None}
    except Exception as exc:  # a health check reports every failure, whatever its kind
        checks["database"] = {"ok": False, "error": exc.__class__.__name__}
    checks["broker"] = broker_check()
    # Reported, never fatal: without embeddings keyword search and writes still work. Imported
    # here because kindmem otherwise never reaches into facts (imports run kindmem <- facts).
    from facts.embedding import embedder_health

    checks["embedder"] = embedder_health()
    if checks["database"]["ok"]:
        last = WorkerHeartbeat.objects.order_by("-seen_at").first()
        checks["worker"] = {
            "last_seen_seconds_ago": (
                round((timezone.now() - last.seen_at).total_seconds()) if last else None
            )
        }
    healthy = checks["database"]["ok"] and checks["broker"]["ok"]
    return JsonResponse({"ok": healthy, "checks": checks}, status=200 if healthy else 503)


def broker_check() -> dict[str, Any]:
    from kindmem.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return {"ok": True, "transport": conn.transport_cls}
    except Exception as exc:  # a health check reports every failure, whatever its kind
        return {"ok": False, "error": exc.__class__.__name__}
