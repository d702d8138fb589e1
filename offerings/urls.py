from django.urls import path

from offerings import readiness, views
from offerings.content import urls as content_urls
from offerings.estimator import urls as estimator_urls
from offerings.planner import urls as planner_urls

app_name = "offerings"

urlpatterns = [
    path("", views.instance_list, name="instance-list"),
    path("instances/<slug:provider>/<slug:slug>/", views.instance_detail, name="instance-detail"),
    path(
        "instances/<slug:provider>/<slug:slug>/report/",
        views.report_correction,
        name="instance-report",
    ),
    path("compare/", views.compare, name="compare"),
    path("gpus/<slug:slug>/", views.gpu_detail, name="gpu-detail"),
    path("providers/", readiness.provider_comparison, name="providers"),
    path("providers/<slug:slug>/", views.provider_detail, name="provider-detail"),
    *estimator_urls.urlpatterns,
    *planner_urls.urlpatterns,
    *content_urls.urlpatterns,
]
