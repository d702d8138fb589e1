"""Curator alerts: judge each scheduled provider's refreshes and email new problems once.

A provider needs attention when its latest attempted run failed or was rejected (`failing`), or
when its last good run is older than its stale threshold (`stale`). The judgement is stored on
`RefreshHealth` (shown in the admin) and every new problem is emailed to CURATOR_EMAILS in one
plain-text message. A problem is identified by its key: `failing:<first failed run of the
streak>` or `stale:<last good run>`, so a provider that keeps failing is reported once, and again
only after it recovered and broke anew. The caller (the providers' tasks) says which providers
are scheduled and their thresholds; nothing here knows about scrapers.
"""

from __future__ import annotations

import logging
import re
import smtplib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from offerings.models import Provider, RefreshHealth, RefreshState, ScrapeRun

logger = logging.getLogger(__name__)

BAD = (ScrapeRun.Status.FAILED, ScrapeRun.Status.REJECTED)
MAX_DETAIL_CHARS = 500
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


@dataclass(frozen=True)
class Assessment:
    state: str
    detail: str
    key: str
    last_run: ScrapeRun | None
    last_good_at: datetime | None

    @property
    def needs_attention(self) -> bool:
        return self.state in RefreshHealth.NEEDS_ATTENTION


def plain(text: object, limit: int = MAX_DETAIL_CHARS) -> str:
    """Scraped text for a plain-text email: one line, no control characters, bounded."""
    flat = _CONTROL.sub(" ", str(text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _age(delta: timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"


def assess(
    provider: Provider, stale_after: timedelta, now: datetime, tracked_since: datetime
) -> Assessment:
    """Judge one provider from its finished runs (a run whose task will retry is not final)."""
    finished = (
        # Replays count too: they are what a worker runs under REFRESH_REPLAY_DIR (tests and
        # demos; refused in production), and a freshness alert about them would be noise.
        ScrapeRun.objects.filter(provider=provider, finished_at__isnull=False)
        .exclude(status=ScrapeRun.Status.RUNNING)
        .exclude(retry_scheduled=True)
        .order_by("-started_at", "-pk")
    )
    last_good = finished.filter(status=ScrapeRun.Status.SUCCEEDED).first()
    latest = finished.exclude(status=ScrapeRun.Status.SKIPPED).first()
    latest_any = finished.first()
    good_at = last_good.finished_at if last_good else None
    if good_at is not None:
        freshness = f"last good run #{last_good.pk} {_age(now - good_at)} ago"
    else:
        freshness = "no good run yet"
    stale = (now - good_at > stale_after) if good_at else (now - tracked_since > stale_after)
    if latest is not None and latest.status in BAD:
        streak = finished.filter(status__in=BAD)
        if last_good is not None:
            streak = streak.filter(started_at__gt=last_good.started_at)
        first_bad = streak.order_by("started_at", "pk").first() or latest
        reason = latest.error_messages[-1] if latest.error_messages else "no reason recorded"
        detail = (
            f"run #{latest.pk} {latest.status} at {latest.finished_at:%Y-%m-%d %H:%M} UTC: "
            f"{plain(reason)}; {freshness}"
            + (f", stale after {_age(stale_after)}" if stale else "")
        )
        return Assessment(RefreshState.FAILING, detail, f"failing:{first_bad.pk}", latest, good_at)
    if last_good is None and latest is None and latest_any is not None:
        # Only skipped runs: the provider is not configured here (no API key), not broken.
        reason = latest_any.error_messages[-1] if latest_any.error_messages else "skipped"
        return Assessment(RefreshState.SKIPPED, plain(reason), "", latest_any, None)
    if stale:
        note = ""
        if latest_any is not None and latest_any.status == ScrapeRun.Status.SKIPPED:
            reason = latest_any.error_messages[-1] if latest_any.error_messages else "skipped"
            note = f"; latest run skipped: {plain(reason)}"
        detail = f"{freshness}, stale after {_age(stale_after)}{note}"
        key = f"stale:{last_good.pk if last_good else 'never'}"
        return Assessment(RefreshState.STALE, detail, key, latest_any, good_at)
    if last_good is None:
        return Assessment(RefreshState.PENDING, freshness, "", latest_any, None)
    return Assessment(RefreshState.OK, freshness, "", latest_any, good_at)


def check_providers(
    thresholds: Mapping[str, timedelta], *, now: datetime | None = None
) -> list[RefreshHealth]:
    """Judge the given providers (slug -> stale threshold), store it, email new problems once."""
    now = now or timezone.now()
    for provider in Provider.objects.filter(slug__in=thresholds):
        RefreshHealth.objects.get_or_create(
            provider=provider,
            defaults={
                "state": RefreshState.PENDING,
                "stale_after": thresholds[provider.slug],
                "checked_at": now,
                "tracked_since": now,
            },
        )
    with transaction.atomic():
        # Row locks: a refresh task and the scheduled check judging at once email once.
        rows = list(
            RefreshHealth.objects.select_for_update(of=("self",))
            .filter(provider__slug__in=thresholds)
            .select_related("provider")
            .order_by("pk")
        )
        new: list[tuple[RefreshHealth, Assessment]] = []
        for health in rows:
            threshold = thresholds[health.provider.slug]
            found = assess(health.provider, threshold, now, health.tracked_since)
            health.state, health.detail = found.state, found.detail
            health.last_run, health.last_good_at = found.last_run, found.last_good_at
            health.stale_after, health.checked_at = threshold, now
            if not found.needs_attention:
                health.alerted_key = ""
            elif found.key != health.alerted_key:
                new.append((health, found))
        if new and notify_curators(new, now):
            for health, found in new:
                health.alerted_key, health.alerted_at = found.key, now
        for health in rows:
            health.save()
    return rows


def _admin_url(path: str) -> str:
    return f"{settings.SITE_URL.rstrip('/')}{path}" if settings.SITE_URL else path


def alert_message(problems: list[tuple[RefreshHealth, Assessment]], now: datetime) -> tuple:
    slugs = [health.provider.slug for health, _ in problems]
    subject = f"[gpucatalog] refresh needs attention: {', '.join(slugs)}"
    lines = [f"Checked at {now:%Y-%m-%d %H:%M} UTC. New problems:", ""]
    for health, found in problems:
        lines.append(f"{health.provider.slug} ({plain(health.provider.name, 100)}): {found.state}")
        lines.append(f"  {found.detail}")
        if found.last_run is not None:
            path = reverse("admin:offerings_scraperun_change", args=[found.last_run.pk])
            lines.append(f"  Run: {_admin_url(path)}")
        lines.append("")
    lines.append(
        "Each problem is emailed once; a provider that recovers and breaks again is reported "
        "again. Providers needing attention: "
        + _admin_url(reverse("admin:offerings_provider_changelist") + "?refresh=attention")
    )
    return subject, "\n".join(lines) + "\n"


def notify_curators(problems: list[tuple[RefreshHealth, Assessment]], now: datetime) -> bool:
    """Email the problems to CURATOR_EMAILS (logged too); False when sending failed."""
    subject, body = alert_message(problems, now)
    for health, found in problems:
        logger.warning(
            "%s needs attention: %s: %s", health.provider.slug, found.state, found.detail
        )
    if not settings.CURATOR_EMAILS:
        logger.warning("CURATOR_EMAILS is empty: the alert above was only logged")
        return True
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, settings.CURATOR_EMAILS)
    except (OSError, smtplib.SMTPException):
        logger.exception("could not email the curators; the next check tries again")
        return False
    return True
