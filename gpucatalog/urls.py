"""URLs: public pages under i18n_patterns (English unprefixed, /zh-hans/), the rest unprefixed."""

from django.conf.urls.i18n import i18n_patterns
from django.contrib import admin
from django.urls import include, path

from offerings import openapi
from offerings.content import urls as content_urls
from offerings.dumps import urls as dump_urls
from offerings.estimator import urls as estimator_urls
from offerings.pages import readiness
from offerings.planner import urls as planner_urls
from offerings.table import feed, views
from offerings.web import health

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", health.healthz, name="healthz"),
    path("api/instances", views.api_instances, name="api-instances"),
    path("api/openapi.json", openapi.api_openapi, name="api-openapi"),
    path("api/providers", readiness.api_providers, name="api-providers"),
    *estimator_urls.api_urlpatterns,
    *planner_urls.api_urlpatterns,
    path("feeds/price-changes/", feed.price_changes, name="feed-price-changes"),
    *dump_urls.file_urlpatterns,
]

urlpatterns += i18n_patterns(
    path("", include("offerings.urls")),
    prefix_default_language=False,
)

urlpatterns += content_urls.unprefixed_urlpatterns
