"""Provider slug -> scraper. The slug is the same in the registry, ScrapeRun, URLs and the CLI."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import httpx
from django.conf import settings

from offerings import writer
from offerings.models import Provider
from offerings.schemas import ScrapeBatch
from providers.base import ScrapeContext
from providers.scrapers import (
    aws,
    azure,
    datacrunch,
    gcp,
    lambda_,
    nebius,
    oci,
    runpod,
    skypilot,
    vast,
)


@dataclass(frozen=True)
class Scraper:
    slug: str
    fetch: Callable[[httpx.Client, ScrapeContext], ScrapeBatch]
    # Setting holding the API key; a provider whose key is unset is skipped (not in replay).
    api_key_setting: str | None = None
    # Setting listing the regions to scrape; empty means the scraper's own default list.
    regions_setting: str | None = None
    # A second credential (OAuth2 client secret beside `api_key_setting`'s client id): the key
    # handed to the scraper is then "id:secret", and empty unless both are set.
    secret_setting: str | None = None
    # Further credential settings a scraper needs (Nebius: the private key): all required; the
    # scraper reads them from `ScrapeContext.credentials`.
    extra_settings: tuple[str, ...] = ()
    # A price source (a public catalog of several providers' prices), not a provider: its
    # display name and home page, for the run records kept under its slug.
    price_source: tuple[str, str] | None = None

    def api_key(self) -> str:
        key = getattr(settings, self.api_key_setting, "") or "" if self.api_key_setting else ""
        if any(not (getattr(settings, name, "") or "") for name in self.extra_settings):
            return ""
        if self.secret_setting is None:
            return key
        secret = getattr(settings, self.secret_setting, "") or ""
        return f"{key}:{secret}" if key and secret else ""

    def credential_settings(self) -> tuple[str, ...]:
        names = (self.api_key_setting, self.secret_setting, *self.extra_settings)
        return tuple(name for name in names if name)

    def credentials(self) -> dict[str, str]:
        """Every credential setting with its value (empty strings for the unset ones)."""
        return {name: getattr(settings, name, "") or "" for name in self.credential_settings()}

    def missing_settings(self) -> list[str]:
        """The credential settings that are unset (empty when the scraper can run)."""
        return [name for name, value in self.credentials().items() if not value]

    def secrets(self) -> list[str]:
        """Every credential value, each to be scrubbed from a recording."""
        return [v for v in (*self.credentials().values(), self.api_key()) if v]

    def regions(self) -> tuple[str, ...]:
        return (
            tuple(getattr(settings, self.regions_setting, ()) or ()) if self.regions_setting else ()
        )


SCRAPERS: dict[str, Scraper] = {
    scraper.slug: scraper
    for scraper in (
        Scraper("aws", aws.fetch, regions_setting="AWS_PRICE_REGIONS"),
        Scraper("azure", azure.fetch, regions_setting="AZURE_PRICE_REGIONS"),
        Scraper("lambda", lambda_.fetch, api_key_setting="LAMBDA_API_KEY"),
        Scraper("oci", oci.fetch, regions_setting="OCI_PRICE_REGIONS"),
        Scraper(
            "datacrunch",
            datacrunch.fetch,
            api_key_setting="DATACRUNCH_CLIENT_ID",
            secret_setting="DATACRUNCH_CLIENT_SECRET",
        ),
        Scraper(
            "runpod",
            runpod.fetch,
            api_key_setting="RUNPOD_API_KEY",
            regions_setting="RUNPOD_PRICE_REGIONS",
        ),
        Scraper("vast", vast.fetch, api_key_setting="VAST_API_KEY"),
        Scraper(
            "gcp", gcp.fetch, api_key_setting="GCP_API_KEY", regions_setting="GCP_PRICE_REGIONS"
        ),
        Scraper(
            "nebius",
            nebius.fetch,
            api_key_setting="NEBIUS_SERVICE_ACCOUNT_ID",
            secret_setting="NEBIUS_PUBLIC_KEY_ID",
            extra_settings=("NEBIUS_PRIVATE_KEY",),
            regions_setting="NEBIUS_PRICE_REGIONS",
        ),
        Scraper(
            "skypilot",
            skypilot.fetch,
            regions_setting="SKYPILOT_CLOUDS",
            price_source=("SkyPilot catalog", skypilot.REPOSITORY_URL),
        ),
    )
}


def catalog_row(slug: str) -> Provider | None:
    """The provider row a scraper's runs are kept under (a price source's made on first use)."""
    provider = Provider.objects.filter(slug=slug).first()
    scraper = SCRAPERS.get(slug)
    if provider is None and scraper is not None and scraper.price_source is not None:
        provider = writer.ensure_price_source(slug, *scraper.price_source)
    return provider


def resolve(slug: str) -> str:
    """The canonical slug for a name given on the command line."""
    slug = slug.strip().lower()
    return Provider.ALIASES.get(slug, slug)
