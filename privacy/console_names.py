"""The console's names for people (`console.names`): a participant or an external
subject by their id (it is all kindmem knows of them), a Kindgi user by their username, each a
link to their person page for staff whose role opens it."""

from __future__ import annotations

from django.http import HttpRequest

from console.names import Key, Named, as_uuid, register
from console.tenant_wall import console_scope, person_url
from kindmem.models import SubjectKind, User
from privacy.person_pages import person_sections


@register("person", by_tenant=True)
def _people(request: HttpRequest, keys: set[Key]) -> dict[Key, Named]:
    """Values "participant:<id>", "user:<user id>", "external:<id>"."""
    opens = bool(person_sections(request))
    user_ids = {
        pk
        for value, _ in keys
        if value.startswith("user:") and (pk := as_uuid(value[5:])) is not None
    }
    users = (
        {
            u.pk: u
            for u in console_scope(
                request, User.objects.filter(pk__in=user_ids).only("id", "username", "tenant_id")
            )
        }
        if user_ids
        else {}
    )
    named: dict[Key, Named] = {}
    for key in keys:
        value, tenant = key
        kind, _, subject_id = value.partition(":")
        if not subject_id or kind not in SubjectKind.values or kind == SubjectKind.CONVERSATION:
            continue
        label = subject_id
        if kind == SubjectKind.USER:
            user = users.get(as_uuid(subject_id))  # type: ignore[arg-type]
            if user is None:
                continue
            label = user.get_username()
            tenant = tenant or (str(user.tenant_id) if user.tenant_id else None)
        url = person_url(kind, subject_id, tenant) if opens else ""
        named[key] = Named(label, url, value)
    return named
