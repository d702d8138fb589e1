from django.urls import path

from offerings import views
from offerings.content import urls as content_urls
from offerings.estimator import urls as estimator_urls

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
    path("providers/<slug:slug>/", views.provider_detail, name="provider-detail"),
    *estimator_urls.urlpatterns,
    *content_urls.urlpatterns,
]
