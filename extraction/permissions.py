"""Role checks only; which conversation a caller may extract is the recall guard's job."""

from __future__ import annotations

from typing import Any

from kindmem.access import PrincipalKind
from kindmem.permissions import HasCredential


class IsRunOrApp(HasCredential):
    """A run token, or an app key (acting for its projects' end users)."""

    def has_permission(self, request: Any, view: Any) -> bool:
        return super().has_permission(request, view) and request.auth.kind in {
            PrincipalKind.RUN,
            PrincipalKind.APP,
        }
