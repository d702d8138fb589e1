"""Content pages (explainer, FAQ, about the data), the sitemap and robots.txt.

Long-form text lives in one template per language (`templates/content/<page>.<lang>.html`),
the FAQ in `offerings.content.faq` and the explainer's sources in `LEARN_SOURCES`, each in both
languages; the language comes from the URL (English unprefixed, `/zh-hans/`).
"""

from __future__ import annotations

from datetime import date
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.postgres.aggregates import ArrayAgg
from django.contrib.sitemaps import Sitemap
from django.db.models import CharField, Count, Exists, Max, OuterRef, Q, Subquery, Value
from django.db.models.functions import Concat, Lower
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import get_language
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from offerings import coverage
from offerings.agents.twins import twin_path
from offerings.content import diagrams as content_diagrams
from offerings.content import facts, faq
from offerings.content.faq import SEED_PAGE_SLUGS, faq_entries, faq_jsonld
from offerings.content.markup import figure_html, table_link_counts
from offerings.models import (
    ExchangeRate,
    FactBasis,
    GpuModel,
    InstanceType,
    Provider,
    RunStatus,
    ScrapeRun,
)
from offerings.web.caching import absolute_url, cached_response

CONTENT_REVIEWED = date(2026, 11, 30)  # the day the explainer and FAQ were last checked


def content_template(page: str) -> list[str]:
    """The page's template in the active language, English when there is none."""
    return [f"content/{page}.{get_language()}.html", f"content/{page}.en.html"]


def nvlink_generations() -> list[dict]:
    return [
        {
            "generation": generation,
            "gpus": ", ".join(facts.NVLINK_GPUS[generation]),
            "figure": figure_html(f"nvlink{generation}"),
        }
        for generation in facts.NVLINK
    ]


INFINIBAND_HARDWARE = {
    "HDR": ("ConnectX-6", "A100"),
    "NDR": ("ConnectX-7", "H100, H200, B200"),
    "XDR": ("ConnectX-8", "B300, GB300"),
}


def infiniband_rates() -> list[dict]:
    return [
        {
            "rate": rate,
            "figure": figure_html(rate.lower()),
            "nic": INFINIBAND_HARDWARE[rate][0],
            "gpus": INFINIBAND_HARDWARE[rate][1],
        }
        for rate in facts.INFINIBAND
    ]


# The explainer's sources, a list item a group: (URL, name, name in Chinese where it differs).
LEARN_SOURCES = (
    ((facts.NVLINK_PAGE, "NVIDIA: NVLink and NVLink Switch", "NVIDIA：NVLink 与 NVLink Switch"),),
    (
        (facts.A100_DATASHEET, "NVIDIA A100 datasheet", "NVIDIA A100 数据手册"),
        (facts.H100_PAGE, "NVIDIA H100", None),
        (facts.V100_PAGE, "NVIDIA V100", None),
        (facts.GB200_NVL72_PAGE, "NVIDIA GB200 NVL72", None),
    ),
    (
        (
            facts.NVIDIA_NDR_OVERVIEW,
            "NVIDIA: NDR InfiniBand overview",
            "NVIDIA：NDR InfiniBand 概述",
        ),
        (facts.CONNECTX8_MANUAL, "NVIDIA ConnectX-8 SuperNIC", None),
        (faq.GPUDIRECT_RDMA, "GPUDirect RDMA", None),
    ),
    (
        (facts.AZURE_NDM_A100_V4, "Azure NDm A100 v4", None),
        (facts.AZURE_ND_H100_V5, "Azure ND H100 v5", None),
        (facts.MI300X_AZURE, "Azure ND MI300X v5", None),
    ),
    (
        (faq.AWS_EFA, "AWS Elastic Fabric Adapter", None),
        (faq.AWS_OFI_NCCL, "aws-ofi-nccl", None),
        (faq.GCP_NETWORK, "Google Cloud: GPU network bandwidth", "Google Cloud：GPU 网络带宽"),
    ),
    ((faq.NCCL_ENV, "NCCL environment variables", "NCCL 环境变量"),),
)


def learn_sources() -> list[SafeString]:
    """The explainer's sources in the active language: one line of links a list item."""
    chinese = get_language() == "zh-hans"
    return [
        format_html_join(
            " · ",
            '<a href="{}" rel="external">{}</a>',
            ((url, (chinese and name_zh) or name) for url, name, name_zh in group),
        )
        for group in LEARN_SOURCES
    ]


@require_safe
@cached_response()
def learn(request: HttpRequest) -> HttpResponse:
    """`/learn/nvlink-vs-infiniband/`: the explainer."""
    context = {
        "cluster_svg": content_diagrams.cluster_svg(),
        "topologies_svg": content_diagrams.topologies_svg(),
        "bandwidth_svg": content_diagrams.bandwidth_svg(),
        "rails_svg": content_diagrams.rails_svg(),
        "nvlink_generations": nvlink_generations(),
        "infiniband_rates": infiniband_rates(),
        "sources": learn_sources(),
        "reviewed": CONTENT_REVIEWED,
        "table_link_counts": table_link_counts(),
    }
    return render(request, content_template("learn"), context)


@require_safe
@cached_response()
def faq(request: HttpRequest) -> HttpResponse:
    """`/faq/`: questions and answers, with the same text as schema.org FAQPage JSON-LD."""
    language = get_language()
    counts = table_link_counts()
    entries = faq_entries(language, counts, absolute=lambda path: absolute_url(request, path))
    # The buyer's first four questions are marked up where they are asked first.
    marked_up = [entry for entry in entries if entry.slug not in SEED_PAGE_SLUGS]
    context = {
        "entries": entries,
        "jsonld": faq_jsonld(marked_up, language),
        "reviewed": CONTENT_REVIEWED,
    }
    return render(request, "content/faq.html", context)


@require_safe
@cached_response()
def about_data(request: HttpRequest) -> HttpResponse:
    """`/about/data/`: where the data comes from, how fresh it is, and the reference rates."""
    visible = Q(instance_types__is_active=True, instance_types__is_hidden=False)
    current = Q(instance_types__offers__is_active=True) & visible
    # Live runs only: a replay reads a recording and is never reported as a refresh.
    last_refresh = ScrapeRun.objects.filter(
        provider=OuterRef("pk"), status=RunStatus.SUCCEEDED, replay_of=""
    ).order_by("-started_at")
    providers = Provider.objects.annotate(
        listed=Count("instance_types", filter=visible, distinct=True),
        newest_price=Max("instance_types__offers__observed_at", filter=current),
        price_origins=ArrayAgg(
            Concat(
                "instance_types__offers__origin",
                Value(":"),
                "instance_types__offers__source",
                Value(":"),
                "instance_types__offers__basis",
                output_field=CharField(),
            ),
            filter=current,
            distinct=True,
            default=[],
        ),
        prices=Count("instance_types__offers", filter=current, distinct=True),
        dated_prices=Count(
            "instance_types__offers",
            filter=current & Q(instance_types__offers__observed_at__isnull=False),
            distinct=True,
        ),
        provider_prices=Count(
            "instance_types__offers",
            filter=current & Q(instance_types__offers__basis=FactBasis.PROVIDER),
            distinct=True,
        ),
        last_refresh=Subquery(last_refresh.values("finished_at")[:1]),
    ).order_by(Lower("name"))
    rates = list(ExchangeRate.objects.order_by("currency", "-rate_date").distinct("currency"))
    for rate in rates:
        rate.per_usd = 1 / rate.usd_per_unit
    listed = [provider for provider in providers if provider.listed]
    prices = sum(p.prices for p in listed)
    dated = sum(p.dated_prices for p in listed)
    stated = sum(p.provider_prices for p in listed)
    context = {
        "providers": listed,
        "prices": prices,
        "dated_prices": dated,
        "dated_percent": round(100 * dated / prices) if prices else 0,
        "provider_prices": stated,
        "provider_percent": round(100 * stated / prices) if prices else 0,
        "rates": rates,
        "corrections_form": route_exists("offerings:instance-report", "provider", "slug"),
        "instance_count": InstanceType.objects.visible().count(),
        "stale_hours": settings.PRICE_STALE_AFTER_HOURS,
        "coverage": coverage.table_rows(coverage.coverage(coverage.catalog_facts())[0]),
    }
    return render(request, content_template("about"), context)


@require_safe
@cache_control(public=True, max_age=24 * 60 * 60)
def robots_txt(request: HttpRequest) -> HttpResponse:
    """Allow everything public; keep crawlers out of the admin and the API; name the sitemap."""
    lines = [
        "User-agent: *",
        "Allow: /",
        "Disallow: /admin/",
        "Disallow: /api/",
        "",
        f"Sitemap: {absolute_url(request, reverse('sitemap'))}",
    ]
    return HttpResponse("\n".join(lines) + "\n", content_type="text/plain; charset=utf-8")


# -- llms.txt ------------------------------------------------------------------------------------


@require_safe
def llms_txt(request: HttpRequest) -> HttpResponse:
    """`/llms.txt` (and `/zh-hans/llms.txt`) in the llmstxt.org form: a title, a summary, then
    the pages and endpoints an assistant should read, each with one line on what it holds. The
    pages link in the request's language; the API and feed are the same in both."""
    page = {
        "seed": "offerings:nvlink-infiniband",
        "learn": "offerings:learn",
        "faq": "offerings:faq",
        "table": "offerings:instance-list",
        "plan": "offerings:plan",
        "estimate": "offerings:estimate",
        "providers": "offerings:providers",
        "data": "offerings:about-data",
        "dumps": "offerings:data",
    }
    unprefixed = {
        "api_instances": "api-instances",
        "api_collectives": "api-collectives",
        "api_estimate": "api-estimate",
        "api_plan": "api-plan",
        "api_providers": "api-providers",
        "openapi": "api-openapi",
        "feed": "feed-price-changes",
        "sitemap": "sitemap",
    }
    mcp = {"mcp": "/mcp"}  # served beside Django (gpucatalog/asgi.py), so not a Django route
    urls = {key: absolute_url(request, reverse(name)) for key, name in (page | unprefixed).items()}
    urls |= {key: absolute_url(request, path) for key, path in mcp.items()}
    urls["seed_md"] = absolute_url(request, twin_path(reverse("offerings:nvlink-infiniband")))
    return render(
        request,
        "content/llms.txt",
        {"urls": urls},
        content_type="text/plain; charset=utf-8",
    )


# -- sitemap -------------------------------------------------------------------------------------


def route_exists(name: str, *args: str) -> bool:
    try:
        reverse(name, args=args)
    except NoReverseMatch:
        return False
    return True


class I18nSitemap(Sitemap):
    """Every URL in both languages, each with its hreflang alternates and x-default."""

    i18n = True
    alternates = True
    x_default = True

    def get_protocol(self, protocol: str | None = None) -> str:
        if settings.SITE_URL:
            return urlsplit(settings.SITE_URL).scheme
        return super().get_protocol(protocol)

    def get_domain(self, site=None) -> str:
        if settings.SITE_URL:
            return urlsplit(settings.SITE_URL).netloc
        return super().get_domain(site)


# Parameterless public pages; a name whose route does not exist is skipped.
STATIC_PAGES = (
    "offerings:instance-list",
    "offerings:learn",
    "offerings:faq",
    "offerings:about-data",
    "offerings:estimate",
    "offerings:nvlink-infiniband",
    "offerings:providers",
    "offerings:plan",
    "offerings:data",
)
#: Routes that are public but are not pages of their own: a comparison needs `?ids=`, and
#: llms.txt is a plain-text index for assistants that links the pages itself.
NOT_IN_SITEMAP = frozenset({"offerings:compare", "offerings:llms-txt"})


class PagesSitemap(I18nSitemap):
    def items(self) -> list[str]:
        return [name for name in STATIC_PAGES if route_exists(name)]

    def location(self, item: str) -> str:
        return reverse(item)


class InstanceSitemap(I18nSitemap):
    def items(self):
        return (
            InstanceType.objects.visible()
            .select_related("provider")
            .order_by("provider__slug", "slug")
        )

    def location(self, item: InstanceType) -> str:
        return reverse(
            "offerings:instance-detail",
            kwargs={"provider": item.provider.slug, "slug": item.slug},
        )


class LandingSitemap(I18nSitemap):
    """The landing pages `/gpus/<slug>/` and `/providers/<slug>/`.

    A subclass names the route (taking the slug as its one argument) and the rows that have a
    page: those with at least one visible instance type. A route that does not exist lists none.
    """

    route = ""

    def rows(self):
        raise NotImplementedError

    def items(self):
        if not route_exists(self.route, "x"):
            return []
        return list(self.rows())

    def location(self, item) -> str:
        return reverse(self.route, args=[item.slug])


class GpuSitemap(LandingSitemap):
    route = "offerings:gpu-detail"

    def rows(self):
        has_visible = InstanceType.objects.visible().filter(gpu=OuterRef("pk"))
        return GpuModel.objects.filter(Exists(has_visible)).order_by("slug")


class ProviderSitemap(LandingSitemap):
    route = "offerings:provider-detail"

    def rows(self):
        has_visible = InstanceType.objects.visible().filter(provider=OuterRef("pk"))
        return Provider.objects.filter(Exists(has_visible)).order_by("slug")


SITEMAPS = {
    "pages": PagesSitemap,
    "instances": InstanceSitemap,
    "gpus": GpuSitemap,
    "providers": ProviderSitemap,
}
