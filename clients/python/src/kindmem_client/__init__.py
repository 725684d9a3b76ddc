"""kindmem's Python client: `Client` (sync) and `AsyncClient`, every /v1 route, on httpx.

from kindmem_client import Client

with Client("kmk_...", base_url="http://127.0.0.1:8000") as kindmem:
    run = kindmem.mint_run(agent_id="support-bot", project_id=PROJECT, participant_id="p-1")
    agent = kindmem.with_token(run["token"])
    agent.remember(type="preference", text="Prefers email", tool_call_id="call-1")
    for fact in agent.iter_facts(type="preference"):
        print(fact["content"])
"""

from __future__ import annotations

from kindmem_client import errors, types
from kindmem_client._async import AsyncClient
from kindmem_client._base import RetryPolicy
from kindmem_client._sync import Client
from kindmem_client.errors import (
    Conflict,
    EmbeddingUnavailable,
    ErasureInProgress,
    ExtractionQuota,
    ExtractionUnavailable,
    FactNotFound,
    Forbidden,
    HeadersTooLarge,
    InvalidFact,
    KindmemError,
    LinkExpired,
    MemoryLimitReached,
    MethodNotAllowed,
    NotAcceptable,
    NotFound,
    NotImplementedByServer,
    PersistenceError,
    RateLimited,
    RequestTooLarge,
    RetentionViolation,
    StaleApproval,
    Unauthenticated,
    Unavailable,
    UnexpectedResponse,
    UnsupportedMediaType,
    UriTooLong,
    ValidationError,
)
from kindmem_client.operations import OPERATIONS

__version__ = "0.1.0"

__all__ = [
    "OPERATIONS",
    "AsyncClient",
    "Client",
    "Conflict",
    "EmbeddingUnavailable",
    "ErasureInProgress",
    "ExtractionQuota",
    "ExtractionUnavailable",
    "FactNotFound",
    "Forbidden",
    "HeadersTooLarge",
    "InvalidFact",
    "KindmemError",
    "LinkExpired",
    "MemoryLimitReached",
    "MethodNotAllowed",
    "NotAcceptable",
    "NotFound",
    "NotImplementedByServer",
    "PersistenceError",
    "RateLimited",
    "RequestTooLarge",
    "RetentionViolation",
    "RetryPolicy",
    "StaleApproval",
    "Unauthenticated",
    "Unavailable",
    "UnexpectedResponse",
    "UnsupportedMediaType",
    "UriTooLong",
    "ValidationError",
    "errors",
    "types",
]
