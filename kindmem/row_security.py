"""Row-level security, the second wall behind the reader guard.

Every tenant-owned table has `FORCE ROW LEVEL SECURITY` and one policy: a row is visible, and
may be written, only while `app.tenant_id` names its tenant (migration
`kindmem/0006_row_level_security`). Web and worker processes log in as the app role, which owns
no table and cannot bypass row security; so a query that forgot its tenant filter in Python
still sees one tenant, and a query run before any tenant is known sees nothing.

The tenant is set on the request's connection once the credential is known (`credential_entry`
for a Bearer key or run token, `TenantMiddleware` for a console session) and cleared when the
request ends. It is a session setting, not `SET LOCAL`: a request's statements run partly in
autocommit, where a transaction-local setting would vanish after the first statement. Django
never shares a connection between two requests at once, and the setting is cleared before the
connection serves the next one.

Processes that log in as the migration role (migrations, management commands, the test suite)
also switch to the app role here, so every request and task runs under the same wall in tests
as in production: `set_config('role', ...)`, as PostgREST does.
"""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse
from psycopg import sql

# What this thread's connection is set to: None (the login role, nothing set), a tenant id,
# "" (the app role with no tenant: no tenant-owned row is visible) or ALL_TENANTS.
_tenant: contextvars.ContextVar[str | None] = contextvars.ContextVar("kindmem_tenant", default=None)

# The platform console's signed-in staff with no tenant of their own (their console lists
# every tenant's approvals and requests). Only TenantMiddleware enters it, for a console
# session; the API (/v1) is always confined to its credential's tenant.
ALL_TENANTS = "*"

_ENTER = (
    "SELECT set_config('role', %s, {local}), set_config('app.tenant_id', %s, {local}),"
    " set_config('app.all_tenants', %s, {local})"
)
_LEAVE = (
    "SELECT set_config('role', 'none', {local}), set_config('app.tenant_id', '', {local}),"
    " set_config('app.all_tenants', 'off', {local})"
)
# What a session is left with between requests (`config.pool.reset`'s statement).
LEAVE_STATEMENT = _LEAVE.format(local="false")


def _local() -> str:
    """Session settings, or transaction-local ones behind a transaction-mode pooler
    (KINDMEM_TRANSACTION_POOLING, PgBouncer): there consecutive transactions of one client may
    run on different server connections, and a session setting would stay behind on one for
    whoever comes next. Every request then runs in one transaction
    (`api.transactions.TransactionPerRequestMiddleware`), whose end clears them."""
    return "true" if settings.TRANSACTION_POOLING else "false"


def _apply(tenant: str | None) -> None:
    if settings.CITUS:
        _apply_on_citus(tenant)
        return
    local = _local()
    with connection.cursor() as cursor:
        if tenant is None:
            cursor.execute(_LEAVE.format(local=local))
        elif tenant == ALL_TENANTS:
            cursor.execute(_ENTER.format(local=local), [str(settings.KINDMEM_APP_ROLE), "", "on"])
        else:
            cursor.execute(
                _ENTER.format(local=local), [str(settings.KINDMEM_APP_ROLE), tenant, "off"]
            )


def _apply_on_citus(tenant: str | None) -> None:
    """On a Citus coordinator (KINDMEM_CITUS) the settings must reach the workers, where each
    shard's policy reads them: Citus forwards `SET LOCAL` (and only that, with
    `citus.propagate_set_commands = 'local'`) to the connections of the transaction, and opens
    them as the role set here, so the workers' row security confines them too. Always inside a
    transaction (`tenant_context` and the request open one)."""
    with connection.cursor() as cursor:
        cursor.execute(_citus_settings(tenant).as_string(cursor.connection))


def _citus_settings(tenant: str | None) -> sql.Composed:
    if tenant is None:
        role, tenant_id, all_tenants = "none", "", "off"
    elif tenant == ALL_TENANTS:
        role, tenant_id, all_tenants = str(settings.KINDMEM_APP_ROLE), "", "on"
    else:
        role, tenant_id, all_tenants = str(settings.KINDMEM_APP_ROLE), tenant, "off"
    return sql.SQL(
        "SET LOCAL citus.propagate_set_commands = 'local'; SET LOCAL role {role};"
        " SET LOCAL app.tenant_id = {tenant_id}; SET LOCAL app.all_tenants = {all_tenants}"
    ).format(
        role=sql.SQL("none") if role == "none" else sql.Identifier(role),
        tenant_id=sql.Literal(tenant_id),
        all_tenants=sql.Literal(all_tenants),
    )


@contextmanager
def tenant_context(tenant_id: uuid.UUID | str | None) -> Iterator[None]:
    """Run the block as the app role, seeing only `tenant_id`'s rows (none if it is None).

    Restores what was set before on the way out, so contexts nest (a sweep over tenants inside
    a worker's task, an audit record after a rolled-back request)."""
    previous = _tenant.get()
    tenant = str(tenant_id) if tenant_id else ""
    # On Citus the settings are transaction-local: the block is a transaction (or savepoint).
    with transaction.atomic() if settings.CITUS else nullcontext():
        token = _tenant.set(tenant)
        _apply(tenant)
        try:
            yield
        finally:
            _tenant.reset(token)
            if connection.connection is not None:  # a closed connection forgot everything
                _apply(previous)


def each_tenant() -> Iterator[str]:
    """Yield every tenant's id, the body of the loop running confined to that tenant: how a
    beat task (a sweep, a purge) works through all tenants under the wall."""
    from kindmem.models import Tenant

    for tenant_id in Tenant.objects.order_by("created_at").values_list("id", flat=True):
        with tenant_context(tenant_id):
            yield str(tenant_id)


def credential_entry(kind: str, prefix: str) -> tuple[str, list[Any]]:
    """The statement that switches to the app role and the tenant of the API key
    (`kind="key"`) or run token (`"run"`) with this prefix ("" if none has it); hand its row to
    `credential_entered`.

    The lookup is `kindmem_credential_tenant`, a SECURITY DEFINER function that returns only
    the tenant id: the credential's own row is then read under the wall like any other, by
    the next statement of the same message (compiled.fetch_after: the server plans and
    runs it once this one has run, under the wall it raised). The enclosing request
    (`TenantMiddleware`) clears it when the request ends."""
    local = _local()
    return (
        f"SELECT set_config('role', %s, {local}),"
        " set_config('app.tenant_id',"
        f" coalesce(kindmem_credential_tenant(%s, %s)::text, ''), {local}),"
        f" set_config('app.all_tenants', 'off', {local})",
        [str(settings.KINDMEM_APP_ROLE), kind, prefix],
    )


# On Citus, the credential's tenant by its prefix, read with every tenant's rows in sight for
# this one statement (what kindmem_credential_tenant returns elsewhere): that function runs as
# its owner, and Citus opens a definer's connections to the workers apart from the
# transaction's, which do not see what the transaction wrote.
_CREDENTIAL_TENANT = {
    "key": "SELECT tenant_id FROM kindmem_apikey WHERE prefix = %s LIMIT 1",
    "run": "SELECT tenant_id FROM kindmem_run WHERE token_prefix = %s LIMIT 1",
}


def enter_credential_tenant(kind: str, prefix: str) -> str:
    """On Citus: find the credential's tenant, then enter it, in two statements (`SET LOCAL`
    takes no function call); return it ("" if no credential has this prefix). The credential's
    row is then read by tenant and prefix, on the tenant's shard."""
    # two round trips: Citus fails a message that both sets and reads a distributed table
    _apply_on_citus(ALL_TENANTS)
    with connection.cursor() as cursor:
        cursor.execute(_CREDENTIAL_TENANT[kind], [prefix])
        row = cursor.fetchone()
    found = row[0] if row else None
    tenant = str(found) if found else ""
    _tenant.set(tenant)
    _apply(tenant)
    return tenant


def credential_entered(row: tuple[Any, ...]) -> str:
    """Record the tenant `credential_entry`'s statement entered (its row); return it."""
    tenant = str(row[1])
    _tenant.set(tenant)
    return tenant


def console_tenant(user: Any) -> str:
    """What a signed-in console user's queries may reach: their tenant's rows; every tenant's
    for platform staff (staff with no tenant: the console's own permission checks decide what
    each of them sees, e.g. a privacy officer picks the tenant of a request); nothing for
    anyone else."""
    if user.tenant_id:
        return str(user.tenant_id)
    return ALL_TENANTS if user.is_staff or user.is_superuser else ""


class TenantMiddleware:
    """Confine each request to its tenant's rows and clear the setting when it ends.

    A console session's tenant is its user's (every tenant for a platform superuser with none);
    a Bearer credential's is set when DRF authenticates it (`credential_entry`): an API request
    never takes a session's. Placed after AuthenticationMiddleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        previous = _tenant.get()
        token = _tenant.set(previous)
        try:
            user: Any = getattr(request, "user", None)
            if not request.path.startswith("/v1/") and user is not None and user.is_authenticated:
                _tenant.set(console_tenant(user))
                _apply(_tenant.get())
            return self.get_response(request)
        finally:
            changed = _tenant.get() != previous
            _tenant.reset(token)
            if changed and connection.connection is not None:
                _apply(previous)
