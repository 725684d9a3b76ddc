"""The console's admin site: Django's, with a refusal that is one of the console's own pages.

A staff member who opens a page their role does not open (a reviewer on a privacy officer's
page, staff in no group on the facts list) is refused with `PermissionDenied`, by Django's
`ModelAdmin` views and by the console's own pages alike. Left to Django, that is a bare
"403 Forbidden" without the console's header or navigation, and `django.request` logs it with
the exception's traceback, as if it were a bug. Here every view the site serves
(`admin_view`: the site's own, every `ModelAdmin`'s and their `get_urls()` pages) answers it
with the console's page `admin/console/refused.html`, status 403; Django's handler then logs
the response as one warning line ("Forbidden: <path>"), no traceback.

`ConsoleAdminConfig` (in INSTALLED_APPS in place of "django.contrib.admin") makes this site
`django.contrib.admin.site`, where every app's `admin.py` registers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.template.response import TemplateResponse

_View = TypeVar("_View", bound=Callable[..., HttpResponseBase])


class ConsoleSite(admin.AdminSite):
    def admin_view(self, view: _View, cacheable: bool = False) -> _View:
        @functools.wraps(view)
        def refusing(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            try:
                return view(request, *args, **kwargs)
            except PermissionDenied:
                return self.refused(request)

        # inside Django's wrapper: signed-out visitors still go to the login page, and the
        # refusal is never cached and CSRF-protected like the page it stands for
        return cast(_View, super().admin_view(refusing, cacheable))

    def refused(self, request: HttpRequest) -> HttpResponse:
        """The page a staff member's role does not open: the console's frame (header, person
        search, navigation), what happened and the way back, as 403."""
        context = {
            **self.each_context(request),
            "title": "Not open to your role",
            "roles": sorted(request.user.groups.values_list("name", flat=True)),
        }
        return TemplateResponse(request, "admin/console/refused.html", context, status=403)


class ConsoleAdminConfig(AdminConfig):
    default_site = "console.site.ConsoleSite"
