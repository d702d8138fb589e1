"""The data page (language-prefixed) and the snapshot files (unprefixed)."""

from django.urls import path

from offerings.dumps import views

urlpatterns = [
    path("data/", views.data_page, name="data"),
]

file_urlpatterns = [
    path("data/<str:filename>", views.data_file, name="data-file"),
]
