from __future__ import annotations

from django.urls import URLPattern, path

from approvals import views

# This app's /v1 routes (included by config/urls.py under /v1/).
urlpatterns: list[URLPattern] = [
    path("remember", views.RememberView.as_view(), name="remember"),
    path("approvals", views.ApprovalListView.as_view(), name="approvals"),
    path(
        "approvals/<str:approval_id>/approve",
        views.ApprovalApproveView.as_view(),
        name="approval-approve",
    ),
    path(
        "approvals/<str:approval_id>/reject",
        views.ApprovalRejectView.as_view(),
        name="approval-reject",
    ),
    path(
        "approvals/<str:approval_id>/verify",
        views.ApprovalVerifyView.as_view(),
        name="approval-verify",
    ),
]
