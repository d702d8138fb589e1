"""Celery tasks taking plain slugs; the refresh itself is `providers.refresh`, as in the CLI.

The work of a refresh lives in `providers.refresh` and the writer; what stays here is the
delivery policy around it, which is more than a wrapper:

`refresh_provider(slug)` refreshes one provider: one at a time per provider (a lock in the
cache), late-acknowledged so a lost worker's task is redelivered (at most
REFRESH_MAX_REDELIVERIES times, then recorded as a failed run), retried with exponential backoff
and jitter when the failure was transient, and bounded by soft and hard time limits that fit the
timeout chain (providers/schedule.py). `refresh_all()` fans out one `refresh_provider` per
registered provider. `check_freshness()` judges every provider and emails new problems.

The admin sends `providers.tasks.refresh_provider` by name: the names come from
`ScrapeRun.REFRESH_TASK` and `providers.schedule`.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path

from billiard.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded
from celery import Task, shared_task
from django.conf import settings
from django.db import OperationalError, connection, transaction

from offerings import writer
from offerings.dumps import snapshot
from offerings.models import ScrapeRun
from providers import alerts, logcontext, refresh
from providers.locks import count_delivery, provider_lock
from providers.registry import SCRAPERS, resolve
from providers.replay import providers_in
from providers.schedule import (
    CHECK_FRESHNESS_TASK,
    PUBLISH_DUMP_TASK,
    REFRESH_ALL_TASK,
    REFRESH_RATES_TASK,
    REFRESH_TASK,
    stale_after,
    timeout_chain,
)

logger = logging.getLogger(__name__)


def retry_countdown(retries: int, rng: Callable[[], float] = random.random) -> float:
    """Seconds before retry number `retries + 1`: exponential, capped, half of it jittered."""
    ceiling = min(
        settings.REFRESH_RETRY_BACKOFF_MAX_SECONDS,
        settings.REFRESH_RETRY_BACKOFF_SECONDS * 2**retries,
    )
    return ceiling / 2 + rng() * ceiling / 2


def check(slugs) -> None:
    """Judge these providers now, so a failed run is flagged (and emailed) without waiting."""
    alerts.check_providers({slug: stale_after(slug) for slug in slugs})


class RefreshTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        # Runs in the worker's main process after a hard time limit killed the child: the run
        # record the child left "running" is closed here rather than by the next check.
        if isinstance(exc, TimeLimitExceeded) and args:
            reason = f"killed at the hard time limit ({self.time_limit} s)"
            for run in refresh.close_lost_runs(resolve(str(args[0])), task_id, reason):
                logger.error("%s: run #%s %s", run.provider.slug, run.pk, reason)


@shared_task(
    bind=True,
    base=RefreshTask,
    name=REFRESH_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=settings.REFRESH_SOFT_TIME_LIMIT_SECONDS,
    time_limit=settings.REFRESH_HARD_TIME_LIMIT_SECONDS,
    max_retries=settings.REFRESH_MAX_RETRIES,
    ignore_result=True,
)
def refresh_provider(self, slug: str, trigger: str = "task") -> str:
    """Refresh one provider's prices; returns the run's status or why nothing ran."""
    slug, trigger, request = resolve(slug), trigger[:20], self.request
    with logcontext.bind(provider=slug, task=request.id):
        if slug not in SCRAPERS:
            logger.error("no scraper is registered for %r: nothing to refresh", slug)
            return "unknown provider"
        chain = timeout_chain()
        deliveries = count_delivery(request.id, request.retries, 2 * chain.visibility_timeout_s)
        if (request.delivery_info or {}).get("redelivered"):
            deliveries = max(deliveries, 2)
        if deliveries > 1:
            reason = f"its worker was lost mid-run; the task was redelivered ({deliveries - 1}x)"
            for run in refresh.close_lost_runs(slug, request.id, reason):
                logger.warning("run #%s closed as failed: %s", run.pk, reason)
        if deliveries > 1 + settings.REFRESH_MAX_REDELIVERIES:
            reason = (
                f"gave up after {deliveries} deliveries: the worker running this refresh was "
                f"lost each time (REFRESH_MAX_REDELIVERIES={settings.REFRESH_MAX_REDELIVERIES})"
            )
            logger.error("%s", reason)
            refresh.record_failed_task(slug, reason, trigger=trigger, task_id=request.id)
            check([slug])
            return "gave up"
        with provider_lock(slug, request.id, chain.lock_timeout_s) as acquired:
            if not acquired:
                logger.info("a refresh of %s is already running: this task skips", slug)
                return "skipped: already running"
            run = _run(self, slug, trigger)
        if run is None:
            return "not in the catalog"
        with logcontext.bind(run=run.pk):
            logger.info(
                "refresh %s: fetched %d, created %d, updated %d, unchanged %d, retired %d, "
                "rejected %d",
                run.status,
                run.fetched,
                run.created,
                run.updated,
                run.unchanged,
                run.retired,
                run.rejected,
            )
        check([slug])
        return run.status


def _run(task: Task, slug: str, trigger: str) -> ScrapeRun | None:
    """Call the service; turn a transient failure into a retry and the soft limit into a run."""
    request = task.request
    try:
        if request.retries:
            # The attempt before this one may have left its run "running" (the database went
            # away mid-run): close it now rather than at the next freshness check. Inside the
            # try, so a database that is still down makes this attempt a retry as well.
            reason = "interrupted by a database or network error; the task was retried"
            for run in refresh.close_lost_runs(slug, request.id, reason):
                logger.warning("run #%s closed as failed: %s", run.pk, reason)
        return refresh.refresh_from_source(
            slug, trigger=trigger, task_id=request.id, replay_dir=settings.REFRESH_REPLAY_DIR
        )
    except refresh.ProviderNotInCatalog as exc:
        logger.error("%s", exc)
        return None
    except (refresh.TransientRefreshError, OperationalError) as exc:
        run = getattr(exc, "run", None)
        if request.retries >= task.max_retries:
            logger.error("transient failure, no retries left (%d): %s", task.max_retries, exc)
            if run is None:
                _drop_broken_connection()
                run = refresh.record_failed_task(
                    slug, f"database error: {exc}", trigger=trigger, task_id=request.id
                )
            return run
        countdown = retry_countdown(request.retries)
        if run is not None:
            writer.note_retry_scheduled(run)
        logger.warning(
            "transient failure, retry %d of %d in %.0f s: %s",
            request.retries + 1,
            task.max_retries,
            countdown,
            exc,
        )
        raise task.retry(exc=exc, countdown=countdown) from exc
    except SoftTimeLimitExceeded:
        _drop_broken_connection()
        reason = f"stopped at the soft time limit ({task.soft_time_limit} s)"
        runs = refresh.close_lost_runs(slug, request.id, reason)
        logger.error("%s", reason)
        return runs[-1] if runs else None


def _drop_broken_connection() -> None:
    """Reconnect after an interrupted query or a lost server (not inside a caller's atomic)."""
    if not connection.in_atomic_block:
        connection.close()


@shared_task(name=REFRESH_ALL_TASK, acks_late=True, soft_time_limit=60, time_limit=90)
def refresh_all(trigger: str = "all") -> list[str]:
    """Queue one `refresh_provider` per registered provider (with a replay dir: those in it)."""
    slugs = sorted(SCRAPERS)
    if settings.REFRESH_REPLAY_DIR:
        slugs = [s for s in providers_in(Path(settings.REFRESH_REPLAY_DIR)) if s in SCRAPERS]
    for slug in slugs:
        transaction.on_commit(
            partial(refresh_provider.apply_async, args=[slug], kwargs={"trigger": trigger})
        )
    logger.info("queued a refresh of %s", ", ".join(slugs) or "no provider")
    return slugs


@shared_task(name=CHECK_FRESHNESS_TASK, acks_late=True, soft_time_limit=120, time_limit=150)
def check_freshness() -> dict[str, str]:
    """Close runs no task can still hold, judge every provider, email new problems."""
    limit = timeout_chain().lock_timeout_s
    reason = "never finished: its worker was lost or killed and the task was not redelivered"
    for run in refresh.close_stuck_runs(timedelta(seconds=limit), reason):
        logger.warning("%s: run #%s closed as failed: %s", run.provider.slug, run.pk, reason)
    healths = alerts.check_providers({slug: stale_after(slug) for slug in SCRAPERS})
    return {health.provider.slug: health.state for health in healths}


@shared_task(
    name=REFRESH_RATES_TASK,
    bind=True,
    acks_late=True,
    soft_time_limit=120,
    time_limit=150,
    max_retries=3,
)
def refresh_rates(self) -> str:
    """Store the ECB's reference rates and re-derive USD prices (as `refresh_rates` does)."""
    import httpx

    from providers.base import ScrapeError
    from providers.ecb import refresh_reference_rates
    from providers.http import make_client

    transport = None
    if settings.REFRESH_REPLAY_DIR:  # tests and demos: the recorded ECB answer
        from providers.replay import ReplayTransport

        transport = ReplayTransport(Path(settings.REFRESH_REPLAY_DIR) / "ecb" / "manifest.json")
    try:
        with make_client(transport) as client:
            summary = refresh_reference_rates(client)
    except httpx.HTTPError as exc:  # the client already retried; try again later
        raise self.retry(exc=exc, countdown=retry_countdown(self.request.retries)) from exc
    except ScrapeError as exc:
        logger.error("reference rates refused, nothing changed: %s", exc)
        return f"refused: {exc}"
    logger.info(
        "reference rates of %s: %s currencies, %s prices re-derived",
        summary.rate_date,
        summary.currencies,
        summary.repriced,
    )
    return str(summary.rate_date)


@shared_task(name=PUBLISH_DUMP_TASK, acks_late=True, soft_time_limit=1500, time_limit=1560)
def publish_dump() -> str:
    """The daily data dump at /data/ (offerings/dumps): write the current data version's
    snapshot unless it is there, and remove those past DUMP_KEEP_DAYS."""
    published, written = snapshot.publish()
    state = "written" if written else "already there"
    logger.info("data dump %s: %s", published.name, state)
    return f"{published.name}: {state}"
