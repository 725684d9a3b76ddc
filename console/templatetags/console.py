"""Template helpers every console page shares: names for ids, content for people.

    {% load console %}
    {% name names "principal" revision.invalidated_by %}   the name, linked, the id on hover
    {% named names "revision-approval" revision.pk as approval %}   the Named, or None
    {% with shown=revision.content|readable_content %}...   text as text, the rest as pairs

`names` is the page's `console.names.Names`, which has looked up everything the page
names at once. Both escape what they show: names and content come from agents and people."""

from __future__ import annotations

from typing import Any

from django import template

from console.names import Named, Names
from console.tenant_wall import readable_content

register = template.Library()


@register.simple_tag
def name(names: Names, kind: str, value: Any, tenant_id: Any = None) -> str:
    """The name of `value`, linked to its page; the id, as text, if it names nothing."""
    return names.link(kind, value, tenant_id)


@register.simple_tag
def named(names: Names, kind: str, value: Any) -> Named | None:
    """`{% named names "revision-approval" revision.pk as approval %}`: the `Named` (label,
    url, state), or None when there is none, for a page that shows it its own way."""
    return names.named(kind, value)


register.filter("readable_content", readable_content)
