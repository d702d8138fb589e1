"""Run one provider's scraper and hand its result to the one upsert (orchestration only)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import httpx
from django.db import DatabaseError
from django.utils import timezone

from offerings import services
from offerings.models import Provider, ScrapeRun
from providers.base import ScrapeContext, ScrapeError
from providers.http import RETRY_STATUSES
from providers.registry import SCRAPERS
from providers.replay import ReplayMismatch, redact_url

logger = logging.getLogger(__name__)


class ProviderNotInCatalog(Exception):
    """The provider has no row yet: load_catalog creates it from fixtures/providers/."""


def describe_http_failure(exc: httpx.HTTPError) -> str:
    """One line saying what went wrong with a request, without secrets."""
    try:
        url = redact_url(str(exc.request.url))
    except RuntimeError:  # an error raised outside a request carries none
        url = "?"
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        note = " (after retries)" if status in RETRY_STATUSES else ""
        return f"HTTP {status} {exc.response.reason_phrase} from {url}{note}"
    if isinstance(exc, ReplayMismatch):
        return str(exc)
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out waiting for {url} (after retries; {type(exc).__name__})"
    return f"request to {url} failed (after retries): {type(exc).__name__}: {exc}"


def refresh_provider(
    slug: str,
    client: httpx.Client,
    *,
    replaying: bool = False,
    trigger: str = "command",
    progress: Callable[[str], None] | None = None,
) -> ScrapeRun:
    """Scrape one provider and upsert what it returned; the run record says how it went."""
    scraper = SCRAPERS[slug]
    provider = Provider.objects.filter(slug=slug).first()
    if provider is None:
        raise ProviderNotInCatalog(
            f"provider {slug!r} is not in the catalog; run `manage.py load_catalog` first"
        )
    api_key = scraper.api_key()
    if scraper.api_key_setting and not api_key and not replaying:
        return services.record_skipped_run(
            provider, f"{scraper.api_key_setting} is not set: {slug} skipped", trigger
        )
    run = services.start_scrape_run(provider, trigger, now=timezone.now())
    ctx = ScrapeContext(
        now=run.started_at,
        api_key=api_key or "replay",
        regions=scraper.regions(),
        progress=progress or (lambda message: None),
    )
    try:
        batch = scraper.fetch(client, ctx)
    except ScrapeError as exc:
        return services.fail_scrape_run(run, str(exc), ctx.warnings)
    except httpx.HTTPError as exc:
        return services.fail_scrape_run(run, describe_http_failure(exc), ctx.warnings)
    except Exception as exc:  # a scraper bug must still close its run, not leave it "running"
        logger.exception("%s: scraper crashed", slug)
        reason = f"scraper error: {type(exc).__name__}: {exc}"
        return services.fail_scrape_run(run, reason, ctx.warnings)
    try:
        return services.upsert_offers(run, batch)
    except (DatabaseError, ValueError) as exc:
        logger.exception("%s: upsert failed", slug)
        return services.fail_scrape_run(run, f"could not write the offers: {exc}", ctx.warnings)
