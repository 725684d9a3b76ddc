from __future__ import annotations

from django.urls import path

from kindmem import views

urlpatterns = [
    path("me", views.WhoAmIView.as_view(), name="whoami"),
    path("runs", views.RunListView.as_view(), name="runs"),
]
