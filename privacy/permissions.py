"""Who may handle privacy requests: a tenant admin key, or the key of a Kindgi user in the
`privacy-officer` group."""

from __future__ import annotations

from typing import Any

from kindmem.permissions import HasCredential

PRIVACY_OFFICER_GROUP = "privacy-officer"


def is_privacy_officer(user: Any) -> bool:
    return bool(user) and user.groups.filter(name=PRIVACY_OFFICER_GROUP).exists()


class IsPrivacyOfficer(HasCredential):
    def has_permission(self, request: Any, view: Any) -> bool:
        if not super().has_permission(request, view):
            return False
        principal = request.auth
        if principal.kind == "admin":
            return True
        return principal.kind == "user" and is_privacy_officer(principal.user)
