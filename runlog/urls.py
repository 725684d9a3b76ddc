from __future__ import annotations

from django.urls import URLPattern

# This app's /v1 routes (included by kindmem/urls.py under /v1/).
urlpatterns: list[URLPattern] = []
