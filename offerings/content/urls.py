"""The content pages' URLs (language-prefixed): explainer, FAQ, data page, the NVLink-or-InfiniBand
page; sitemap and robots (unprefixed)."""

from django.contrib.sitemaps.views import sitemap
from django.urls import path

from offerings.content import interconnect_page, views

urlpatterns = [
    path("learn/nvlink-vs-infiniband/", views.learn, name="learn"),
    path("faq/", views.faq, name="faq"),
    path("about/data/", views.about_data, name="about-data"),
    path("nvlink-infiniband/", interconnect_page.nvlink_infiniband, name="nvlink-infiniband"),
    path("llms.txt", views.llms_txt, name="llms-txt"),
]

unprefixed_urlpatterns = [
    path("sitemap.xml", sitemap, {"sitemaps": views.SITEMAPS}, name="sitemap"),
    path("robots.txt", views.robots_txt, name="robots-txt"),
]
