"""`Authorization: Bearer <API key or run token>` for every /v1 route."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import authentication, exceptions

from api.bearer import API_KEY_MARKER, split_token
from compiled import compiled, fetch_after
from kindmem.access import Principal, PrincipalKind
from kindmem.credentials import matches
from kindmem.models import ApiKey, Run
from kindmem.row_security import (
    credential_entered,
    credential_entry,
    enter_credential_tenant,
)

# last_used_at is refreshed at most this often, so a busy key is not a write per request.
LAST_USED_GRANULARITY = timedelta(minutes=1)


class BearerAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Any) -> tuple[Any, Principal] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        if scheme != self.keyword or not token.strip():
            raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <key or run token>'.")
        principal = principal_of(token.strip())
        return (principal.user, principal)

    def authenticate_header(self, request: Any) -> str:
        return f'{self.keyword} realm="kindmem"'

    @staticmethod
    def _api_key(token: str, key: ApiKey | None) -> Principal:
        if key is None or not matches(token, key.key_hash):
            raise exceptions.AuthenticationFailed("Invalid credential.")
        if key.is_revoked:
            raise exceptions.AuthenticationFailed("This key was revoked.")
        # A key that names a person is that person's credential (a user key always does; an
        # admin key may): it ends when the person is deactivated, as their console login does.
        if key.user is not None and not key.user.is_active:
            raise exceptions.AuthenticationFailed("This key's user was deactivated.")
        now = timezone.now()
        if key.last_used_at is None or key.last_used_at < now - LAST_USED_GRANULARITY:
            ApiKey.objects.filter(tenant_id=key.tenant_id, pk=key.pk).update(last_used_at=now)
        return Principal(
            kind=PrincipalKind(key.kind), tenant_id=key.tenant_id, api_key=key, user=key.user
        )

    @staticmethod
    def _run(token: str, run: Run | None) -> Principal:
        if run is None or not matches(token, run.token_hash):
            raise exceptions.AuthenticationFailed("Invalid credential.")
        if run.is_expired:
            raise exceptions.AuthenticationFailed("This run token has expired.")
        # A run stands only while the key that minted it does. Every run is minted by a key
        # (`run_mint`), so a run without one lost it: keys are now kept (Run.minted_by is
        # RESTRICT, the console only revokes), but a key deleted before that left its runs
        # with minted_by NULL, and those must not come back to life.
        minter = run.minted_by
        if minter is None:
            raise exceptions.AuthenticationFailed("The key that minted this run is gone.")
        if minter.is_revoked:
            raise exceptions.AuthenticationFailed("The key that minted this run was revoked.")
        # The run acts with its user's readers, and for the person whose key minted it.
        if any(u is not None and not u.is_active for u in (run.user, minter.user)):
            raise exceptions.AuthenticationFailed("This run's user was deactivated.")
        return Principal(kind=PrincipalKind.RUN, tenant_id=run.tenant_id, run=run, user=run.user)


def principal_of(token: str) -> Principal:
    """The principal of a Bearer token, looked up in one round trip, or AuthenticationFailed.

    Every door that takes a credential asks this: DRF's authentication above, and the MCP
    server before it opens a stream (config/mcp_server.py). It leaves this connection confined
    to the credential's tenant (row security), as a request's authentication does."""
    parsed = split_token(token)
    if parsed is None:
        raise exceptions.AuthenticationFailed("Invalid credential.")
    marker, prefix = parsed
    # From here on this request sees only the credential's tenant's rows (the app role,
    # row security); no such credential: no rows at all, so the lookup finds none. The
    # credential's row is read in the same round trip, by the statement after the one
    # that raised the wall: the server plans and runs it under the wall, as if sent apart.
    is_key = marker == API_KEY_MARKER
    kind = "key" if is_key else "run"
    if settings.CITUS:  # two statements: the tenant, then its credential on its shard
        tenant = enter_credential_tenant(kind, prefix)
        credential = _credential_in_tenant(is_key, tenant, prefix) if tenant else None
    else:
        entered, [found] = fetch_after(
            credential_entry(kind, prefix), (api_key_of if is_key else run_of)(prefix)
        )
        credential_entered(entered[0])
        credential = found[0] if found else None
    if is_key:
        return BearerAuthentication._api_key(token, credential)
    return BearerAuthentication._run(token, credential)


# Every request looks its credential up, as `.first()` would; by the unique prefix: one plan for
# every credential (`generic`)
@compiled(generic=True)
def api_key_of(prefix: str) -> Any:
    return ApiKey.objects.select_related("user").filter(prefix=prefix).order_by("pk")[:1]


@compiled(generic=True)
def run_of(prefix: str) -> Any:
    return (
        Run.objects.select_related("project", "agent", "user", "minted_by__user")
        .filter(token_prefix=prefix)
        .order_by("pk")[:1]
    )


def _credential_in_tenant(is_key: bool, tenant: str, prefix: str) -> Any:
    """The credential's row by tenant and prefix (on Citus: its tenant's shard only)."""
    if is_key:
        return ApiKey.objects.select_related("user").filter(tenant_id=tenant, prefix=prefix).first()
    return (
        Run.objects.select_related("project", "agent", "user", "minted_by__user")
        .filter(tenant_id=tenant, token_prefix=prefix)
        .first()
    )
