"""Role check for the review endpoints (what a reviewer may see is the tenant filter's job)."""

from __future__ import annotations

from typing import Any

from approvals.services import is_reviewer
from kindmem.permissions import HasCredential


class IsReviewer(HasCredential):
    """A tenant admin key, or a Kindgi user key whose user is in the `reviewer` group."""

    message = "Only a reviewer or a tenant admin may review memories."

    def has_permission(self, request: Any, view: Any) -> bool:
        return super().has_permission(request, view) and is_reviewer(request.auth)
