from django.urls import path, re_path

from offerings.agents import views as agents
from offerings.content import urls as content_urls
from offerings.dumps import urls as dump_urls
from offerings.estimator import urls as estimator_urls
from offerings.pages import readiness
from offerings.pages import views as pages
from offerings.planner import urls as planner_urls
from offerings.table import views as table

app_name = "offerings"

urlpatterns = [
    path("", table.instance_list, name="instance-list"),
    path("instances/<slug:provider>/<slug:slug>/", pages.instance_detail, name="instance-detail"),
    path(
        "instances/<slug:provider>/<slug:slug>/report/",
        pages.report_correction,
        name="instance-report",
    ),
    path("compare/", pages.compare, name="compare"),
    path("gpus/<slug:slug>/", pages.gpu_detail, name="gpu-detail"),
    path("providers/", readiness.provider_comparison, name="providers"),
    path("providers/<slug:slug>/", pages.provider_detail, name="provider-detail"),
    *estimator_urls.urlpatterns,
    *planner_urls.urlpatterns,
    *content_urls.urlpatterns,
    *dump_urls.urlpatterns,
    # Last: `/<path>.md`, the Markdown twin of the page at `/<path>/`.
    re_path(r"^(?P<path>[a-z0-9][a-z0-9/._-]*)\.md$", agents.markdown_twin, name="markdown-twin"),
]
