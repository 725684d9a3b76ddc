"""What the fact search tests share: the hashing embedder for every test, the search call,
facts planted straight in the tables (embedded, fast, many)."""

from __future__ import annotations

from typing import Any

import pytest

from embeddings.providers import HashingEmbedder
from facts import provenance
from facts.models import EmbeddingState, Fact, Revision

URL = "/v1/facts/search"
HASHING = HashingEmbedder()


@pytest.fixture(autouse=True)
def hashing(settings: Any) -> None:
    settings.EMBEDDER = "hashing"
    settings.EMBED_BUDGET_MS = 5_000  # the hashing embedder answers in well under that


def search(api: Any, headers: dict[str, str], **body: Any) -> Any:
    return api.post(URL, body, format="json", **headers)


def plant(tenant: Any, texts: list[str], **fact_fields: Any) -> list[Revision]:
    """Facts written straight to the tables, embedded with the hashing model (fast, many)."""
    kind = fact_fields.pop("type", "note")  # popped once, for every fact alike
    facts = Fact.objects.bulk_create(Fact(tenant=tenant, type=kind, **fact_fields) for _ in texts)
    vectors = HASHING.embed(texts)
    return Revision.objects.bulk_create(
        Revision(
            tenant=tenant,
            fact=fact,
            version=1,
            content={"text": text},
            content_hash=provenance.content_hash({"text": text}, None, None),
            attributed_kind="service",
            attributed_id="test",
            search_text=text,
            embedding=vector,
            embedding_model=HASHING.model,
            embedding_state=EmbeddingState.DONE,
        )
        for fact, text, vector in zip(facts, texts, vectors, strict=True)
    )


def hit_ids(response: Any) -> list[str]:
    return [h["fact"]["id"] for h in response.json()["hits"]]
