"""Who may handle privacy requests: a tenant admin key, or the key of a Kindgi user in the
`privacy-officer` group."""

from __future__ import annotations

from typing import Any

from kindmem.access import PRIVACY_OFFICER_GROUP, PrincipalKind, is_privacy_officer
from kindmem.permissions import HasCredential

__all__ = ["PRIVACY_OFFICER_GROUP", "console_officer", "is_privacy_officer"]


def console_officer(request: Any) -> bool:
    """Whether a console request is a privacy officer's: active staff, and a superuser or in the
    group (the console's start pages, downloads and privacy pages ask)."""
    user = request.user
    return bool(
        user.is_active and user.is_staff and (user.is_superuser or is_privacy_officer(user))
    )


class IsPrivacyOfficer(HasCredential):
    def has_permission(self, request: Any, view: Any) -> bool:
        if not super().has_permission(request, view):
            return False
        principal = request.auth
        if principal.kind == PrincipalKind.ADMIN:
            return True
        return principal.kind == PrincipalKind.USER and is_privacy_officer(principal.user)
