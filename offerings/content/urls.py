"""The content pages' URLs: explainer, FAQ and data page (language-prefixed), sitemap and robots."""

from django.contrib.sitemaps.views import sitemap
from django.urls import path

from offerings.content import views

urlpatterns = [
    path("learn/nvlink-vs-infiniband/", views.learn, name="learn"),
    path("faq/", views.faq, name="faq"),
    path("about/data/", views.about_data, name="about-data"),
]

unprefixed_urlpatterns = [
    path("sitemap.xml", sitemap, {"sitemaps": views.SITEMAPS}, name="sitemap"),
    path("robots.txt", views.robots_txt, name="robots-txt"),
]
