from __future__ import annotations

from django.urls import path

from webhooks import views

urlpatterns = [
    path("webhooks", views.EndpointListView.as_view(), name="webhooks"),
    path("webhooks/<str:endpoint_id>", views.EndpointDetailView.as_view(), name="webhook"),
]
