from __future__ import annotations

from django.urls import path

from audit import views

urlpatterns = [path("audit", views.AuditListView.as_view(), name="audit")]
