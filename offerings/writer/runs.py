"""Refresh run records: started, skipped, failed, retried, and the last good run the guards
compare against."""

from __future__ import annotations

from collections.abc import Iterable

from django.utils import timezone

from offerings.models import Provider, ScrapeRun


def start_scrape_run(
    provider: Provider, trigger: str = "command", now=None, task_id: str = "", replay_of: str = ""
) -> ScrapeRun:
    """Record that a refresh of `provider` (or a replay of `replay_of`) began; committed at once
    so a crash still shows it."""
    return ScrapeRun.objects.create(
        provider=provider,
        trigger=trigger,
        started_at=now or timezone.now(),
        task_id=task_id,
        replay_of=replay_of,
    )


def record_skipped_run(provider: Provider, reason: str, trigger: str = "command") -> ScrapeRun:
    """A provider that could not run (no API key): its run record says why."""
    now = timezone.now()
    return ScrapeRun.objects.create(
        provider=provider,
        trigger=trigger,
        started_at=now,
        finished_at=now,
        status=ScrapeRun.Status.SKIPPED,
        error_messages=[reason],
    )


def fail_scrape_run(run: ScrapeRun, reason: str, warnings: Iterable[str] = ()) -> ScrapeRun:
    """Close a run that failed: nothing in the catalog changes, the reason is kept."""
    run.status = ScrapeRun.Status.FAILED
    run.errors += 1
    run.error_messages = [*run.error_messages, reason]
    run.warnings = [*run.warnings, *warnings]
    run.finished_at = max(timezone.now(), run.started_at)
    run.save()
    return run


def note_retry_scheduled(run: ScrapeRun) -> None:
    """A failed run whose task tries again later: not final, so no alert is raised for it."""
    ScrapeRun.objects.filter(pk=run.pk).update(retry_scheduled=True)
    run.retry_scheduled = True


def last_good_run(
    provider: Provider, exclude: ScrapeRun | None = None, replay_of: str | None = None
) -> ScrapeRun | None:
    """The provider's latest good run; with `replay_of`, of that kind only (live runs for "",
    replays of that recording otherwise), so a replay is never measured against a live read."""
    runs = ScrapeRun.objects.filter(provider=provider, status=ScrapeRun.Status.SUCCEEDED)
    if replay_of is not None:
        runs = runs.filter(replay_of=replay_of)
    if exclude is not None:
        runs = runs.exclude(pk=exclude.pk)
    return runs.order_by("-started_at", "-pk").first()


def ensure_price_source(slug: str, name: str, website: str) -> Provider:
    """The run records' home of a price source (SkyPilot's catalog): created on first use."""
    provider, _ = Provider.objects.get_or_create(
        slug=slug,
        defaults={
            "name": name,
            "website": website,
            "kind": Provider.Kind.PRICE_SOURCE,
            "source_url": website,
        },
    )
    return provider
