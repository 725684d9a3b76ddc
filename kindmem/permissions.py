"""Role checks only; what a caller may read is the reader guard's job, inside each query."""

from __future__ import annotations

from typing import Any

from rest_framework import permissions

from kindmem.access import Principal, PrincipalKind


def principal_of(request: Any) -> Principal:
    return request.auth


class HasCredential(permissions.BasePermission):
    """Any valid API key or run token."""

    def has_permission(self, request: Any, view: Any) -> bool:
        return isinstance(request.auth, Principal)


class IsTenantAdmin(HasCredential):
    def has_permission(self, request: Any, view: Any) -> bool:
        return super().has_permission(request, view) and request.auth.kind == PrincipalKind.ADMIN


class CanMintRuns(HasCredential):
    """An app or a Kindgi user mints runs; a run cannot mint another."""

    def has_permission(self, request: Any, view: Any) -> bool:
        return super().has_permission(request, view) and request.auth.kind in {
            PrincipalKind.APP,
            PrincipalKind.USER,
        }


class IsRun(HasCredential):
    def has_permission(self, request: Any, view: Any) -> bool:
        return super().has_permission(request, view) and request.auth.kind == PrincipalKind.RUN
