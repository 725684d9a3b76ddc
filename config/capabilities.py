"""`GET /v1/capabilities`: what this deployment can do for this credential, probed before a call
(seed 003's `IMemoryRetrieverCapabilities`: "a consumer probes these before dispatching a query
so it never silently gets an empty result"), so an agent learns that semantic search needs an
embedder here, or that its key may not review, from the probe rather than from a 503 or a 403.

In config because it reads every app's routes: each operation's answer is its route's own
permission classes asked about this request, so the probe cannot drift from what the route
decides."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.serializers import ErrorOutput
from approvals.views import ApprovalListView, RememberView
from audit.views import AuditListView
from embeddings.providers import embedder_health
from extraction.provider import extraction_health
from extraction.views import ConversationExtractView
from facts import search as fact_search
from facts.search_views import FactSearchView
from facts.views import FactListView
from kindmem.permissions import principal_of
from kindmem.views import RunListView
from privacy.views import AccessRequestListView, ErasureListView
from recall import search as recall_search
from recall.views import RecallView
from runlog.views import RunLogView

# operation -> its route's view, whose permission classes decide (none depends on the method)
OPERATIONS: dict[str, type[APIView]] = {
    "facts": FactListView,
    "search_facts": FactSearchView,
    "recall": RecallView,
    "remember": RememberView,
    "run_log": RunLogView,
    "mint_runs": RunListView,
    "review": ApprovalListView,
    "erasure": ErasureListView,
    "subject_access": AccessRequestListView,
    "audit": AuditListView,
    "extract": ConversationExtractView,
}
NEEDS_EMBEDDER = frozenset({"semantic", "hybrid"})


class EmbedderCapability(serializers.Serializer):
    available = serializers.BooleanField(help_text="Semantic and hybrid retrieval work now.")
    provider = serializers.CharField(help_text="`none`, `local`, `openai`, ...")
    model = serializers.CharField(allow_null=True)
    dimensions = serializers.IntegerField(allow_null=True)
    runtime = serializers.CharField(allow_null=True, help_text="The local model's runtime.")
    error = serializers.CharField(allow_null=True, help_text="Why it is not available.")


class ExtractionCapability(serializers.Serializer):
    available = serializers.BooleanField(
        help_text="`POST /v1/conversations/{id}/extract` works now (a chat model answers)."
    )
    model = serializers.CharField(allow_null=True, help_text="The operator's chat model.")
    error = serializers.CharField(
        allow_null=True, help_text="Why not (`extraction-unavailable` is what it would answer)."
    )


class CrossEncoderCapability(serializers.Serializer):
    configured = serializers.BooleanField(
        help_text="The operator's `/rerank` server reorders searches' best hits (skipped, and"
        " said so in the answer, when it is slow or down)."
    )
    model = serializers.CharField(allow_null=True)
    candidates = serializers.IntegerField(help_text="How many hits it reorders.")
    budget_ms = serializers.IntegerField(help_text="How long a search waits for it.")


class RetrievalCapability(serializers.Serializer):
    modes = serializers.ListField(
        child=serializers.CharField(), help_text="The modes that answer now (never empty-handed)."
    )
    unavailable_modes = serializers.DictField(
        child=serializers.CharField(), help_text="Mode -> the error code it would answer."
    )


class CapabilitiesOutput(serializers.Serializer):
    kind = serializers.CharField(help_text="The credential's kind: admin, app, user or run.")
    supports_semantic_recall = serializers.BooleanField(help_text="Seed 003's capability.")
    supports_temporal_query = serializers.BooleanField(help_text="`valid_at` / `as_of` reads.")
    supports_link_traversal = serializers.BooleanField(help_text="`GET /v1/facts/{id}/links`.")
    facts = RetrievalCapability()
    recall = RetrievalCapability()
    rerankers = serializers.ListField(
        child=serializers.CharField(), help_text="Every reranker a search may name."
    )
    default_rerankers = serializers.ListField(
        child=serializers.CharField(), help_text="Applied when a search names none."
    )
    arms = serializers.ListField(
        child=serializers.CharField(),
        help_text="Retrieval arms on beside keyword and semantic (hybrid recall): `temporal`"
        " ranks what was said around a date the query names.",
    )
    cross_encoder = CrossEncoderCapability()
    relevance_floors = serializers.DictField(
        child=serializers.FloatField(),
        help_text="What `abstain` drops under: corpus.mode[.leg] -> the lowest leg score kept"
        " (BM25 for keyword, cosine for semantic; -1: no floor).",
    )
    embedder = EmbedderCapability()
    extraction = ExtractionCapability()
    merge_patch = serializers.BooleanField(
        help_text="`PATCH /v1/facts/{id}` with `application/merge-patch+json`."
    )
    import_files = serializers.BooleanField(help_text="`POST /v1/facts/import` of memory files.")
    operations = serializers.DictField(
        child=serializers.BooleanField(),
        help_text="Operation -> whether this credential may call its route (its permission).",
    )


def _retrieval(modes: tuple[str, ...], embedder_ok: bool) -> dict[str, Any]:
    missing = {m: "embedding-unavailable" for m in modes if m in NEEDS_EMBEDDER and not embedder_ok}
    return {"modes": [m for m in modes if m not in missing], "unavailable_modes": missing}


def _may(request: Request, view_class: type[APIView]) -> bool:
    view = view_class()
    return all(p.has_permission(request, view) for p in view.get_permissions())


class CapabilitiesView(APIView):
    """What this deployment can do for this credential: retrieval modes that answer now, the
    rerankers, the embedder, extraction, merge patch and import, and which operations it may
    call."""

    @extend_schema(responses={200: CapabilitiesOutput, 401: ErrorOutput}, tags=["capabilities"])
    def get(self, request: Request) -> Response:
        principal = principal_of(request)
        health = embedder_health()
        extraction = extraction_health()
        embedder_ok = bool(health["ok"]) and health.get("model") is not None
        body = {
            "kind": principal.kind,
            "supports_semantic_recall": embedder_ok,
            "supports_temporal_query": True,
            "supports_link_traversal": True,
            "facts": _retrieval(fact_search.MODES, embedder_ok),
            "recall": _retrieval(recall_search.MODES, embedder_ok),
            "rerankers": list(settings.RERANKERS_KNOWN),
            "default_rerankers": list(settings.RERANK),
            "arms": list(settings.RETRIEVAL_ARMS),
            "cross_encoder": {
                "configured": bool(settings.RERANKER_URL),
                "model": settings.RERANKER_MODEL or None,
                "candidates": settings.RERANKER_CANDIDATES,
                "budget_ms": settings.RERANKER_BUDGET_MS,
            },
            "relevance_floors": dict(settings.RELEVANCE_THRESHOLDS),
            "embedder": {
                "available": embedder_ok,
                "provider": health["provider"],
                "model": health.get("model"),
                "dimensions": health.get("dimensions"),
                "runtime": health.get("runtime"),
                "error": health.get("error")
                or (None if embedder_ok else "No embedder is configured (KINDMEM_EMBEDDER)."),
            },
            "extraction": {
                "available": extraction["available"],
                "model": extraction["model"],
                "error": extraction["error"],
            },
            "merge_patch": True,
            "import_files": True,
            "operations": {name: _may(request, view) for name, view in OPERATIONS.items()},
        }
        return Response(CapabilitiesOutput(body).data)
