"""Refuse to run on a database that could lose committed memory or lacks pgvector 0.8."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.db import connection

MINIMUM_PGVECTOR = (0, 8)


def database_problems() -> list[str]:
    """What is wrong with the database for kindmem, in words; empty when all is well."""
    problems = []
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('fsync'), current_setting('full_page_writes')")
        fsync, full_page_writes = cursor.fetchone()
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    if fsync != "on":
        problems.append("fsync is off: a crash could lose committed writes")
    if full_page_writes != "on":
        problems.append("full_page_writes is off: a crash could corrupt pages")
    if row is None:
        problems.append("the pgvector extension is not installed (run the migrations)")
    else:
        version = tuple(int(part) for part in row[0].split(".")[:2])
        if version < MINIMUM_PGVECTOR:
            problems.append(f"pgvector {row[0]} is older than 0.8")
    return problems


def assert_durable_database() -> None:
    problems = database_problems()
    if problems:
        raise ImproperlyConfigured("kindmem refuses to start: " + "; ".join(problems))


def login_problems() -> list[str]:
    """Why this process's login could step around row security; empty when it cannot."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT rolsuper, rolbypassrls,"
            " EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = 'public'"
            " AND tableowner = current_user)"
            " FROM pg_roles WHERE rolname = current_user"
        )
        superuser, bypasses, owns_tables = cursor.fetchone()
    problems = []
    if superuser or bypasses:
        problems.append("its database login is a superuser or may bypass row security")
    if owns_tables:
        problems.append("its database login owns tables (it could disable row security)")
    return problems


def assert_confined_login() -> None:
    """Web and worker processes must log in as the app role (docs/security.md: Database roles)."""
    problems = login_problems()
    if problems:
        raise ImproperlyConfigured(
            "kindmem refuses to serve: "
            + "; ".join(problems)
            + ". Set KINDMEM_DATABASE_LOGIN=app (the default for config.wsgi) and give"
            " DATABASE_URL the app role, DATABASE_MIGRATION_URL the tables' owner."
        )
