from __future__ import annotations

from django.urls import URLPattern, path

from facts import memory_file_views, search_views, views

# This app's /v1 routes (included by config/urls.py under /v1/).
urlpatterns: list[URLPattern] = [
    path("facts", views.FactListView.as_view(), name="facts"),
    path("facts/search", search_views.FactSearchView.as_view(), name="facts-search"),
    path("facts/export", memory_file_views.FactExportView.as_view(), name="facts-export"),
    path("facts/import", memory_file_views.FactImportView.as_view(), name="facts-import"),
    path("facts/<str:fact_id>", views.FactDetailView.as_view(), name="fact"),
    path("facts/<str:fact_id>/revisions", views.FactRevisionsView.as_view(), name="fact-revisions"),
    path("facts/<str:fact_id>/supersede", views.FactSupersedeView.as_view(), name="fact-supersede"),
    path("facts/<str:fact_id>/verify", views.FactVerifyView.as_view(), name="fact-verify"),
    path("facts/<str:fact_id>/links", views.FactLinksView.as_view(), name="fact-links"),
    path("facts/<str:fact_id>/links/<str:link_id>", views.FactLinkView.as_view(), name="fact-link"),
]
