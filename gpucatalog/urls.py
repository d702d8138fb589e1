"""URLs: public pages under i18n_patterns (English unprefixed, /zh-hans/), the rest unprefixed."""

from django.conf.urls.i18n import i18n_patterns
from django.contrib import admin
from django.contrib.sitemaps.views import sitemap
from django.urls import include, path

from offerings import estimate_views, feeds, health, pages, views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", health.healthz, name="healthz"),
    path("api/instances", views.api_instances, name="api-instances"),
    path("api/openapi.json", views.api_openapi, name="api-openapi"),
    path("api/estimate", estimate_views.api_estimate, name="api-estimate"),
    path("feeds/price-changes/", feeds.price_changes, name="feed-price-changes"),
]

urlpatterns += i18n_patterns(
    path("", include("offerings.urls")),
    prefix_default_language=False,
)

urlpatterns += [
    path("sitemap.xml", sitemap, {"sitemaps": pages.SITEMAPS}, name="sitemap"),
    path("robots.txt", pages.robots_txt, name="robots-txt"),
]
