from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from config.capabilities import CapabilitiesView
from config.health import healthz
from config.metrics import metrics

handler400 = "api.errors.json_bad_request"
handler404 = "api.errors.json_not_found"
handler500 = "api.errors.json_server_error"

api_v1 = [
    path("capabilities", CapabilitiesView.as_view(), name="capabilities"),
    path(
        "schema",
        SpectacularAPIView.as_view(permission_classes=[], authentication_classes=[]),
        name="schema",
    ),
    path(
        "docs",
        SpectacularSwaggerView.as_view(
            url_name="schema", permission_classes=[], authentication_classes=[]
        ),
        name="docs",
    ),
]

APP_ROUTES = [
    "kindmem.urls",
    "facts.urls",
    "recall.urls",
    "runlog.urls",
    "approvals.urls",
    "extraction.urls",
    "privacy.urls",
    "audit.urls",
    "webhooks.urls",
]

urlpatterns = [
    *(path("v1/", include(module)) for module in APP_ROUTES),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("v1/", include(api_v1)),
    path("console/", admin.site.urls),
    path("", RedirectView.as_view(url="/console/", permanent=False)),
]
