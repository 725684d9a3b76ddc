"""Who may handle privacy requests: a tenant admin key, or the key of a Kindgi user in the
`privacy-officer` group."""

from __future__ import annotations

from typing import Any

from kindmem.access import PrincipalKind
from kindmem.permissions import HasCredential

PRIVACY_OFFICER_GROUP = "privacy-officer"


def is_privacy_officer(user: Any) -> bool:
    """Whether `user` is in the privacy-officer group. Remembered on the user object, which
    lives for one request: a console page asks once per privacy page in its navigation."""
    if not user:
        return False
    known = getattr(user, "_kindmem_privacy_officer", None)
    if known is None:
        known = user.groups.filter(name=PRIVACY_OFFICER_GROUP).exists()
        user._kindmem_privacy_officer = known
    return known


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
