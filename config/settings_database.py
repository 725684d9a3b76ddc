"""The database settings: the two logins, kept connections, prepared statements, a pooler in
transaction mode, each process's pool, its application name, the read replica and the write
throttle's own connection. config/settings.py imports them by name."""

from __future__ import annotations

import os
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.embedded_db import APP_ROLE as EMBEDDED_APP_ROLE
from config.embedded_db import DATABASE_NAME as EMBEDDED_DATABASE_NAME
from config.pool import pool_options
from config.settings_env import (
    DATA_DIR,
    EMBEDDED_DATABASE,
    env_bool,
    env_choice,
    env_float,
    env_int,
)

# Two logins (docs/security.md "Database roles"). Migrations and management commands log in as
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
# migrations connect to PostgreSQL directly (docs/operations.md "Behind PgBouncer").
TRANSACTION_POOLING = env_bool("KINDMEM_TRANSACTION_POOLING", False)
# DATABASE_URL names a Citus coordinator (deploy/citus.md): the tenant's settings must reach the
# workers, which only transaction-local ones do (kindmem/row_security.py), so everything above
# holds there too, and Celery's tenant contexts are transactions.
CITUS = env_bool("KINDMEM_CITUS", False)
if CITUS:
    TRANSACTION_POOLING = True
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
# a Celery prefork child runs one thing at a time and keeps one connection (two with the
# throttle's); an ASGI process (the web's gunicorn asgi workers, the MCP server's uvicorn:
# config/asgi.py turns KINDMEM_DATABASE_POOL on) takes them from a pool of its own, at most
# KINDMEM_DATABASE_POOL_MAX for requests and 2 for the throttle's counters (config/pool.py says
# why). A request that finds none free within KINDMEM_DATABASE_POOL_TIMEOUT seconds, or would
# wait behind KINDMEM_DATABASE_POOL_MAX_WAITING others, is answered 503 `unavailable` with
# Retry-After. No pool in Celery: one made before the worker forks would not survive the fork.
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
