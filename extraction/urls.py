from __future__ import annotations

from django.urls import URLPattern, path

from extraction import views

# This app's /v1 routes (included by config/urls.py under /v1/).
urlpatterns: list[URLPattern] = [
    path(
        "conversations/<str:conversation_id>/extract",
        views.ConversationExtractView.as_view(),
        name="conversation-extract",
    ),
]
