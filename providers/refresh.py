"""Run one provider's scraper and hand its result to the one upsert (orchestration only)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import httpx
from django.conf import settings
from django.db import DatabaseError, OperationalError, transaction
from django.utils import timezone

from offerings import writer
from offerings.models import Provider, ScrapeRun
from providers import logcontext
from providers.base import ScrapeContext, ScrapeError
from providers.exchanges import redact_url
from providers.http import RETRY_STATUSES, make_client, no_sleep
from providers.registry import SCRAPERS, catalog_row
from providers.replay import (
    ReplayError,
    ReplayMismatch,
    ReplayTransport,
    manifest_path,
    recording_name,
)

logger = logging.getLogger(__name__)


def _not_set(names: list[str]) -> str:
    """`X is not set` or `X and Y are not set`: name every missing credential."""
    return f"{names[0]} is not set" if len(names) == 1 else f"{' and '.join(names)} are not set"


class ProviderNotInCatalog(Exception):
    """The provider has no row yet: load_catalog creates it from fixtures/providers/."""


class TransientRefreshError(Exception):
    """The run failed for a reason worth retrying later: its run record is closed as failed."""

    def __init__(self, run: ScrapeRun, reason: str) -> None:
        super().__init__(reason)
        self.run = run


def is_transient(exc: BaseException) -> bool:
    """Network failures the client gave up on, or a database that could not be reached."""
    if isinstance(exc, ReplayMismatch):  # a recording without the request: never transient
        return False
    return isinstance(exc, httpx.TimeoutException | httpx.NetworkError | OperationalError)


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
    task_id: str = "",
    raise_transient: bool = False,
    recorded_at: Callable[[], datetime | None] | None = None,
    pinned: dict[str, str] | None = None,
    replay_of: str = "",
) -> ScrapeRun:
    """Scrape one provider and upsert what it returned; the run record says how it went.

    A live run's prices are observed now. A replay's are observed when its recording was made:
    `recorded_at()` (a ReplayTransport's) after the fetch, or unknown without one, never now.

    With `raise_transient`, a failure worth retrying (see `is_transient`) still closes the run
    as failed, then raises `TransientRefreshError` so the caller can schedule a retry.
    """
    scraper = SCRAPERS[slug]
    provider = catalog_row(slug)
    if provider is None:
        raise ProviderNotInCatalog(
            f"provider {slug!r} is not in the catalog; run `manage.py load_catalog` first"
        )
    api_key = scraper.api_key()
    if scraper.api_key_setting and not api_key and not replaying:
        return writer.record_skipped_run(
            provider, f"{_not_set(scraper.missing_settings())}: {slug} skipped", trigger
        )
    run = writer.start_scrape_run(
        provider, trigger, now=timezone.now(), task_id=task_id, replay_of=replay_of
    )
    ctx = ScrapeContext(
        now=run.started_at,
        api_key=api_key or "replay",
        regions=scraper.regions(),
        credentials={} if replaying else scraper.credentials(),
        progress=progress or (lambda message: None),
        pinned=dict(pinned or {}) if replaying else {},
    )
    # Live: the writer stamps the run's time. A replay: its recording's date, or unknown.
    observed = (recorded_at or (lambda: None)) if replaying else None
    with logcontext.bind(provider=slug, run=run.pk):
        return _fetch_and_upsert(run, scraper, client, ctx, raise_transient, observed)


def _fetch_and_upsert(
    run: ScrapeRun,
    scraper,
    client: httpx.Client,
    ctx: ScrapeContext,
    raise_transient: bool,
    observed: Callable[[], datetime | None] | None = None,
) -> ScrapeRun:
    slug = scraper.slug
    try:
        batch = scraper.fetch(client, ctx)
    except ScrapeError as exc:
        return writer.fail_scrape_run(run, str(exc), ctx.warnings)
    except httpx.HTTPError as exc:
        run = writer.fail_scrape_run(run, describe_http_failure(exc), ctx.warnings)
        if raise_transient and is_transient(exc):
            raise TransientRefreshError(run, describe_http_failure(exc)) from exc
        return run
    except Exception as exc:  # a scraper bug must still close its run, not leave it "running"
        logger.exception("%s: scraper crashed", slug)
        reason = f"scraper error: {type(exc).__name__}: {exc}"
        return writer.fail_scrape_run(run, reason, ctx.warnings)
    try:
        return _upsert(run, batch, observed)
    except (DatabaseError, ValueError) as exc:
        logger.exception("%s: upsert failed", slug)
        reason = f"could not write the offers: {exc}"
        run = writer.fail_scrape_run(run, reason, ctx.warnings)
        if raise_transient and is_transient(exc):
            raise TransientRefreshError(run, reason) from exc
        return run


def _upsert(run: ScrapeRun, batch, observed=None) -> ScrapeRun:
    """The one upsert; under the test-only pause hook, held open before its commit."""
    dated = {} if observed is None else {"observed_at": observed()}
    pause_file = settings.REFRESH_TEST_PAUSE_FILE
    if not pause_file:
        return writer.upsert_offers(run, batch, **dated)
    with transaction.atomic():
        run = writer.upsert_offers(run, batch, **dated)  # a savepoint inside: nothing committed yet
        _pause_before_commit(Path(pause_file))
    return run


def _pause_before_commit(path: Path) -> None:
    """The first upsert to get here writes its pid to `path` and sleeps; later ones go on."""
    try:
        with path.open("x", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")
    except FileExistsError:
        return
    logger.warning(
        "test pause: holding the upsert open for %ss", settings.REFRESH_TEST_PAUSE_SECONDS
    )
    time.sleep(settings.REFRESH_TEST_PAUSE_SECONDS)


def refresh_from_source(
    slug: str, *, trigger: str, task_id: str = "", replay_dir: str = ""
) -> ScrapeRun:
    """Refresh one provider from its API, or from `replay_dir/<slug>/` (tests and demos).

    A failure worth retrying raises `TransientRefreshError` after its run is closed as failed.
    """
    transport = None
    if replay_dir:
        try:
            transport = ReplayTransport(manifest_path(Path(replay_dir), slug, single=False))
        except ReplayError as exc:
            provider = catalog_row(slug)
            if provider is None:
                raise ProviderNotInCatalog(f"provider {slug!r} is not in the catalog") from None
            recording = recording_name(manifest_path(Path(replay_dir), slug, single=False))
            run = writer.start_scrape_run(provider, trigger, task_id=task_id, replay_of=recording)
            return writer.fail_scrape_run(run, str(exc))
    with make_client(transport, sleep=no_sleep if replay_dir else None) as client:
        return refresh_provider(
            slug,
            client,
            replaying=bool(replay_dir),
            trigger=trigger,
            task_id=task_id,
            raise_transient=True,
            recorded_at=transport.recorded_at if transport is not None else None,
            pinned=transport.pinned_commits() if transport is not None else None,
            replay_of=recording_name(transport.manifest) if transport is not None else "",
        )


def close_lost_runs(slug: str, task_id: str, reason: str) -> list[ScrapeRun]:
    """Close the runs a lost delivery of this task left running: failed, with the reason."""
    runs = ScrapeRun.objects.filter(
        provider__slug=slug, task_id=task_id, status=ScrapeRun.Status.RUNNING
    ).select_related("provider")
    return [writer.fail_scrape_run(run, reason) for run in runs]


def record_failed_task(slug: str, reason: str, *, trigger: str, task_id: str) -> ScrapeRun | None:
    """A refresh that never ran (given up on): a failed run record says why."""
    provider = Provider.objects.filter(slug=slug).first()
    if provider is None:
        return None
    run = writer.start_scrape_run(provider, trigger, task_id=task_id)
    return writer.fail_scrape_run(run, reason)


def close_stuck_runs(older_than: timedelta, reason: str) -> list[ScrapeRun]:
    """Close task-run records still "running" long after any task could hold them."""
    cutoff = timezone.now() - older_than
    runs = (
        ScrapeRun.objects.filter(status=ScrapeRun.Status.RUNNING, started_at__lt=cutoff)
        .exclude(task_id="")
        .select_related("provider")
    )
    return [writer.fail_scrape_run(run, reason) for run in runs]
