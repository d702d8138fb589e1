"""The estimator's URLs: the page (under the language prefix) and its JSON API (unprefixed)."""

from django.urls import path

from offerings.estimator import collective_views, views

urlpatterns = [
    path("estimate/", views.estimate_page, name="estimate"),
]

api_urlpatterns = [
    path("api/estimate", views.api_estimate, name="api-estimate"),
    path("api/collectives", collective_views.api_collectives, name="api-collectives"),
]
