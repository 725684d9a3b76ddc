from __future__ import annotations

from django.urls import URLPattern, path

from privacy import views

# This app's /v1 routes (included by config/urls.py under /v1/).
urlpatterns: list[URLPattern] = [
    path("erasures", views.ErasureListView.as_view(), name="erasures"),
    path("erasures/<str:erasure_id>", views.ErasureDetailView.as_view(), name="erasure"),
    path(
        "subject-access-requests",
        views.AccessRequestListView.as_view(),
        name="subject-access-requests",
    ),
    path(
        "subject-access-requests/<str:request_id>",
        views.AccessRequestDetailView.as_view(),
        name="subject-access-request",
    ),
    path(
        "subject-access-requests/<str:request_id>/download",
        views.AccessRequestDownloadView.as_view(),
        name="subject-access-request-download",
    ),
]
