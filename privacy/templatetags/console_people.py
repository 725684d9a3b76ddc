"""Template helpers of the person page: content for people, names for principals, links."""

from __future__ import annotations

from typing import Any

from django import template

from console.templatetags.console import readable_content
from console.tenant_wall import person_url

register = template.Library()


# The person page's content, as every console page shows it.
register.filter("readable_content", readable_content)


@register.filter
def name_of(principal: str, names: dict[str, str]) -> str:
    """The readable name of a principal string, or the string itself."""
    return names.get(principal, principal) if principal else "—"


@register.simple_tag
def person_href(kind: str, subject_id: Any, tenant_id: Any = None) -> str:
    return person_url(kind, str(subject_id), tenant_id)


@register.simple_tag(takes_context=True)
def may_find_people(context: dict[str, Any]) -> bool:
    """Whether the signed-in staff member's role opens person pages (the header's search)."""
    from privacy.person_pages import person_sections

    request = context.get("request")
    return bool(request is not None and request.user.is_authenticated and person_sections(request))


@register.simple_tag(takes_context=True)
def console_front_page(context: dict[str, Any]) -> dict[str, Any]:
    """The panels of the signed-in staff member's front page (privacy/front_page.py)."""
    from privacy.front_page import front_page

    request = context.get("request")
    if request is None or not request.user.is_authenticated:
        return {"tables": False}
    # Asked twice per page (the content and the sidebar): built once.
    if not hasattr(request, "_kindmem_front_page"):
        request._kindmem_front_page = front_page(request)
    return request._kindmem_front_page
