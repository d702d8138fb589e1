"""The planner's URLs: the page (under the language prefix) and its JSON API (unprefixed)."""

from django.urls import path

from offerings.planner import views

urlpatterns = [
    path("plan/", views.plan_page, name="plan"),
]

api_urlpatterns = [
    path("api/plan", views.api_plan, name="api-plan"),
]
