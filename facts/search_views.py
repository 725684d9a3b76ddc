"""`POST /v1/facts/search`: keyword, semantic or hybrid search over the facts the caller may read.

A POST for its body (a query and filters), not a write: `reads_only` keeps the write throttle
off it, and its audit phase is `retrieve`.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api import fields
from api.fields import StrictSerializer, TextField
from api.serializers import ErrorOutput
from audit.recording import AuditedView
from facts.search import MAX_TOP_K, MODES, FactSearch, SearchHit, fact_search
from facts.serializers import FactOutput
from kindmem.access import readers_for
from kindmem.permissions import principal_of
from kindmem.serializers import ReadersInput, readers_snapshot
from retrieval import cross_encoder

MAX_QUERY_CHARS = 2_000
MAX_TAGS = 20
ERRORS = {400: ErrorOutput, 401: ErrorOutput, 403: ErrorOutput, 503: ErrorOutput}
ABSTAIN_HELP = (
    "Drop the hits under this deployment's calibrated relevance floors (per mode; hybrid: per"
    " leg), so a question nothing answers may get no hits: `capabilities` names the floors."
)
MIN_RELEVANCE_HELP = (
    "Keyword and semantic only: drop hits whose score (BM25; cosine similarity) is under this."
    " Hybrid's fused score is a rank, not a relevance: use `abstain` there."
)


class SearchScopeInput(StrictSerializer):
    """Narrowing within what the guard lets through: every given key must match exactly."""

    org_id = fields.UUIDField(required=False)
    project_id = fields.UUIDField(required=False)
    user_id = fields.UUIDField(required=False)
    participant_id = TextField(required=False, max_length=200, min_length=1)
    thread_id = TextField(required=False, max_length=200, min_length=1)
    session_id = TextField(required=False, max_length=200, min_length=1)


class FactSearchInput(StrictSerializer):
    mode = serializers.ChoiceField(
        choices=MODES,
        default="hybrid",
        help_text="keyword: any of the query's words, BM25 (quoted phrases required, -word"
        " excluded); semantic: by meaning; hybrid: both, fused by rank.",
    )
    query = TextField(max_length=MAX_QUERY_CHARS, trim_whitespace=False)
    type = TextField(required=False, max_length=100, min_length=1)
    scope = SearchScopeInput(required=False)
    tags = serializers.ListField(
        child=TextField(max_length=100, min_length=1), required=False, max_length=MAX_TAGS
    )
    valid_at = serializers.DateTimeField(required=False)
    top_k = fields.IntegerField(required=False, min_value=1, max_value=MAX_TOP_K, default=10)
    readers = ReadersInput(
        required=False,
        help_text="Narrow to these readers (the seed's `readers`): a hit is a fact these and the"
        " credential's readers may both read, guarded in the query before `top_k`; `{}`:"
        " tenant-wide facts only. Absent: the credential's readers.",
    )
    abstain = fields.BooleanField(required=False, default=False, help_text=ABSTAIN_HELP)
    min_relevance = fields.FloatField(
        required=False, min_value=-1.0, max_value=1_000.0, help_text=MIN_RELEVANCE_HELP
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "min_relevance" in attrs and attrs["mode"] not in ("keyword", "semantic"):
            raise serializers.ValidationError({"min_relevance": MIN_RELEVANCE_HELP})
        return attrs

    def validate_query(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("The query is empty.")
        if "\x00" in value:
            raise serializers.ValidationError("The query contains a NUL character.")
        return value


class SearchHitOutput(serializers.Serializer):
    fact = FactOutput(source="revision")
    score = serializers.FloatField(
        help_text="BM25 (keyword), cosine similarity (semantic), the fused reciprocal-rank score"
        " (hybrid)."
    )
    ranks = serializers.DictField(
        child=serializers.IntegerField(), help_text="The hit's 1-based rank in each leg."
    )


class FactSearchOutput(serializers.Serializer):
    hits = SearchHitOutput(many=True)
    reranker = serializers.ChoiceField(
        choices=[cross_encoder.APPLIED, cross_encoder.SKIPPED],
        required=False,
        help_text="Only with the operator's cross-encoder: `applied` (hits in its order), or"
        " `skipped` (slow or down: hits in the search's own order).",
    )

    @staticmethod
    def render(hits: list[SearchHit]) -> dict[str, Any]:
        """What the declared fields render, written out, as `FactOutput` renders each fact:
        DRF built (deep-copied) these serializers' fields on every search for three numbers a
        hit. The fields above remain the schema; tests/facts/test_output.py holds the two
        renderings equal."""
        fact = FactOutput()
        return {
            "hits": [
                {
                    "fact": fact.to_representation(hit.revision),
                    "score": float(hit.score),
                    "ranks": {str(leg): int(rank) for leg, rank in hit.ranks.items()},
                }
                for hit in hits
            ]
        }


class FactSearchView(AuditedView):
    """Search the facts the credential may read; each hit's fact in the facts API's shape."""

    audit_kind = "fact"
    audit_phases: ClassVar[dict[str, str]] = {"POST": "retrieve"}
    replica_methods = frozenset({"POST"})
    reads_only = True  # a POST for its body, not a write: the write throttle leaves it alone
    reads_in_autocommit = True  # it writes nothing but its event (AuditedView)

    @extend_schema(
        request=FactSearchInput,
        responses={200: FactSearchOutput, **ERRORS},
        operation_id="facts_search",
    )
    def post(self, request: Request) -> Response:
        body = FactSearchInput(data=request.data)
        body.is_valid(raise_exception=True)
        validated: dict[str, Any] = body.validated_data
        principal = principal_of(request)
        scope = {k: str(value) for k, value in validated.get("scope", {}).items()}
        self.audit.query_snapshot = {
            "mode": validated["mode"],
            "query": validated["query"],
            "top_k": validated["top_k"],
            "type": validated.get("type"),
            "scope": scope,
            "tags": validated.get("tags", []),
            "valid_at": validated["valid_at"].isoformat() if "valid_at" in validated else None,
            "abstain": validated["abstain"],
            "min_relevance": validated.get("min_relevance"),
        }
        if "readers" in validated:
            self.audit.query_snapshot["readers"] = readers_snapshot(validated["readers"])
        if "project_id" in scope:
            self.audit.project_id = scope["project_id"]
        self.audit.ask(type=validated.get("type"), scope=scope)
        hits: list[SearchHit] = fact_search(
            search=FactSearch(
                tenant_id=principal.tenant_id,
                readers=readers_for(principal),
                mode=validated["mode"],
                query=validated["query"],
                top_k=cross_encoder.pool(validated["top_k"], MAX_TOP_K),
                type=validated.get("type"),
                scope=scope,
                tags=tuple(validated.get("tags", ())),
                valid_at=validated.get("valid_at"),
                rerank=settings.RERANK,
                narrowed_to=validated.get("readers"),
                abstain=validated["abstain"],
                min_relevance=validated.get("min_relevance"),
            )
        )
        hits, reranker = cross_encoder.reranked(
            validated["query"], hits, _fact_text, validated["top_k"]
        )
        self.audit.touch(
            ids=[h.revision.fact_id for h in hits],
            subjects=[(s.kind, s.subject_id) for h in hits for s in h.revision.subjects.all()],
            targets=[(h.revision.fact.type, h.revision.fact.scope) for h in hits],
        )
        rendered = FactSearchOutput.render(hits)
        if reranker:
            rendered["reranker"] = reranker
        return Response(rendered)


def _fact_text(hit: SearchHit) -> str:
    """What the cross-encoder reads of a fact: its text, or its whole content as JSON."""
    content = hit.revision.content
    text = content.get("text") if isinstance(content, dict) else None
    return text if isinstance(text, str) else json.dumps(content, ensure_ascii=False)
