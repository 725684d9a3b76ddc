from __future__ import annotations

from django.urls import URLPattern, path

from runlog import views

# This app's /v1 routes (included by config/urls.py under /v1/).
urlpatterns: list[URLPattern] = [
    path("runs/<uuid:run_id>/log", views.RunLogView.as_view(), name="run-log"),
    path("runs/<uuid:run_id>/log/verify", views.RunLogVerifyView.as_view(), name="run-log-verify"),
]
