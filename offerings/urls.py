from django.urls import path

from offerings import estimate_views, pages, views

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
    path("estimate/", estimate_views.estimate_page, name="estimate"),
]

urlpatterns += [
    path("learn/nvlink-vs-infiniband/", pages.learn, name="learn"),
    path("faq/", pages.faq, name="faq"),
    path("about/data/", pages.about_data, name="about-data"),
]
