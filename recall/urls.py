from __future__ import annotations

from django.urls import URLPattern, path

from recall import views

# This app's /v1 routes (included by config/urls.py under /v1/).
urlpatterns: list[URLPattern] = [
    path(
        "conversations/<str:conversation_id>/messages",
        views.ConversationMessagesView.as_view(),
        name="conversation-messages",
    ),
    path(
        "conversations/<str:conversation_id>/messages/<int:sequence>",
        views.ConversationMessageView.as_view(),
        name="conversation-message",
    ),
    path("recall", views.RecallView.as_view(), name="recall"),
]
