"""Scraped and submitted strings are hostile: they are stored as text, and URLs only as http(s)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.test import Client
from pydantic import ValidationError as SchemaError

from offerings import writer
from offerings.models import (
    CorrectionReport,
    Fabric,
    Offer,
    Provider,
    Region,
    ScrapeRun,
    SkuReview,
)
from offerings.schemas import ExchangeRateIn, ScrapeBatch, ScrapedOffer
from providers.base import ScrapeError
from providers.scrapers.aws import offer_file_url
from tests.security.hostile import PAYLOAD, ingest_hostile_catalog, replay_azure

pytestmark = pytest.mark.django_db

HOSTILE_URLS = [
    "javascript:window.__pwned=1",
    "JavaScript:alert(1)",
    " javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "ftp://files.example/prices.csv",
    "//evil.example/x",
]


def test_the_replayed_scraper_stores_hostile_names_verbatim_as_text():
    hostile = ingest_hostile_catalog()
    run: ScrapeRun = hostile["run"]
    assert run.status == "succeeded"
    assert any("<img src=x onerror" in row["sku"] for row in run.rejected_rows)
    skus = set(SkuReview.objects.filter(provider__slug="azure").values_list("sku", flat=True))
    assert f"Standard_ND96{PAYLOAD}_v5" in skus
    assert "Standard_NC<iframe src=javascript:window.__pwned=1>_v4" in skus
    review = SkuReview.objects.get(sku=f"Standard_ND96{PAYLOAD}_v5")
    assert review.parsed["skuName"].startswith("data:text/html,<script>")
    region = Region.objects.get(provider__slug="azure", code__startswith='">')
    assert "onerror" in region.code
    assert region.name.startswith("javascript:")
    offers = Offer.objects.filter(instance=hostile["instance"], is_active=True)
    assert offers.filter(region=region).exists()
    assert all(o.source_url.startswith("https://prices.azure.com/") for o in offers)


def test_a_next_page_link_off_the_api_is_refused_not_followed():
    ingest_hostile_catalog()
    before = list(Offer.objects.values_list("pk", "price_per_hour"))
    run = replay_azure("azure-next-page-link")
    assert run.status == "failed"
    assert "NextPageLink 'javascript:window.__pwned=1' leaves" in run.error_messages[0]
    assert list(Offer.objects.values_list("pk", "price_per_hour")) == before


@pytest.mark.parametrize(
    "path",
    ["@evil.example/offer.json", ".evil.example/x", "javascript:alert(1)", "evil/x", ":8080@x/"],
)
def test_an_aws_offer_file_path_that_leaves_the_price_list_host_is_refused(path):
    with pytest.raises(ScrapeError, match="leaves https://pricing"):
        offer_file_url(path)


def test_an_aws_offer_file_path_on_the_host_is_followed():
    path = "/offers/v1.0/aws/AmazonEC2/20260901000000/us-east-1/index.json"
    assert offer_file_url(path) == "https://pricing.us-east-1.amazonaws.com" + path


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_the_schemas_refuse_a_non_http_url_from_scrapers_and_fixtures(url):
    offer = {
        "sku": "x",
        "instance_slug": "x",
        "region": "eastus",
        "kind": "on-demand",
        "price_per_hour": "1",
        "currency": "USD",
        "source_url": url,
    }
    with pytest.raises(SchemaError, match="source_url"):
        ScrapedOffer(**offer)
    rate = {"currency": "EUR", "rate_date": "2026-01-01", "usd_per_unit": "1.1", "source_url": url}
    with pytest.raises(SchemaError, match="source_url"):
        ExchangeRateIn(**rate)


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_the_models_refuse_a_non_http_url(catalog, url):
    provider = Provider.objects.get(slug="aws")
    provider.website = url
    with pytest.raises(ValidationError) as raised:
        provider.full_clean()
    assert "website" in raised.value.message_dict
    offer = Offer.objects.first()
    offer.source_url = url
    with pytest.raises(ValidationError) as raised:
        offer.full_clean()
    assert "source_url" in raised.value.message_dict


@pytest.mark.parametrize(
    ("model", "field"),
    [
        (Provider, "source_url"),
        (Provider, "website"),
        (Fabric, "cluster_source_url"),
        (Offer, "source_url"),
        (CorrectionReport, "source_url"),
    ],
)
def test_the_database_refuses_a_javascript_url_written_past_the_validators(site, model, field):
    with pytest.raises(IntegrityError, match=f"_{field}_http"), transaction.atomic():
        model.objects.update(**{field: "javascript:window.__pwned=1"})


def test_a_scraped_offer_built_past_its_schema_fails_the_run_at_the_database(catalog):
    """Defence in depth: even an unvalidated model reaching the set-based upsert is refused."""
    instance = catalog["ib"]
    run = writer.start_scrape_run(instance.provider, "test")
    forged = ScrapedOffer.model_construct(
        sku=instance.name,
        instance_slug=instance.slug,
        region="us-east-1",
        region_name="",
        geo="na",
        kind="on-demand",
        term_months=0,
        price_per_hour=Decimal("24.00"),
        currency="USD",
        available=None,
        source_url="javascript:window.__pwned=1",
        parsed={},
    )
    before = list(Offer.objects.values_list("pk", "source_url", "price_per_hour"))
    with pytest.raises(IntegrityError), transaction.atomic():
        writer.upsert_offers(run, ScrapeBatch(offers=(forged,)))
    assert list(Offer.objects.values_list("pk", "source_url", "price_per_hour")) == before


def report(url: str) -> int:
    form = {"topic": "fabric", "message": "It has eight 400G ports.", "source_url": url}
    return Client().post("/instances/aws/ib-8x/report/", form).status_code


@pytest.mark.parametrize("url", [u for u in HOSTILE_URLS if not u.startswith("//")])
def test_the_correction_form_refuses_a_non_http_source(catalog, url):
    assert report(url) == 400
    assert not CorrectionReport.objects.exists()


def test_the_correction_form_stores_a_scheme_relative_link_as_https(catalog):
    assert report("//docs.example/x") == 302
    assert CorrectionReport.objects.get().source_url == "https://docs.example/x"
