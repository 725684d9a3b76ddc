"""The console front page's count of memories waiting for review."""

from __future__ import annotations

from typing import Any

from django import template

from approvals.admin import tenant_approvals

register = template.Library()


@register.simple_tag(takes_context=True)
def pending_review_count(context: dict[str, Any]) -> int | None:
    """Pending approvals the user may see and decide; None when they may not view them."""
    request = context.get("request")
    if request is None or not request.user.has_perm("approvals.view_approval"):
        return None
    return tenant_approvals(request).pending().count()
