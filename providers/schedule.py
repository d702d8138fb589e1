"""When each provider is refreshed, when it counts as stale, and the timeout chain, in one place.

The beat schedule is built from the registry, so a provider added to `providers/registry.py` is
scheduled without touching this file: one `refresh_provider` entry per provider at its interval
(REFRESH_INTERVALS, else REFRESH_INTERVAL_MINUTES) plus `refresh_rates`, the daily data dump
(`publish_dump`) and `check_freshness`.

The timeout chain keeps the limits in order, from the innermost to the outermost:

    worst HTTP request (per-attempt timeouts x attempts + the waits between attempts)
      < soft time limit (the task is told to stop and records its run as failed)
      < hard time limit (the worker kills the child)
      < lock timeout (the per-provider lock outlives any task holding it)
      < broker visibility timeout (Redis redelivers an unacknowledged message only after it,
        so a task still running is never handed to a second worker)

and the longest retry countdown stays under the visibility timeout too (a countdown message
waits unacknowledged in the worker). `timeout_chain().check()` runs at start-up and in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from itertools import pairwise

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from offerings.models import ScrapeRun
from providers import http
from providers.registry import SCRAPERS, resolve

REFRESH_TASK = ScrapeRun.REFRESH_TASK
REFRESH_ALL_TASK = "providers.tasks.refresh_all"
CHECK_FRESHNESS_TASK = "providers.tasks.check_freshness"
REFRESH_RATES_TASK = "providers.tasks.refresh_rates"
PUBLISH_DUMP_TASK = "providers.tasks.publish_dump"
# The lock outlives the hard time limit by this much (the child is killed at the hard limit).
LOCK_MARGIN_SECONDS = 60


def interval_minutes(slug: str) -> int:
    return settings.REFRESH_INTERVALS.get(slug, settings.REFRESH_INTERVAL_MINUTES)


def stale_after(slug: str) -> timedelta:
    """How old the last good run may get before the provider needs attention (default 2x)."""
    minutes = settings.REFRESH_STALE_AFTER_MINUTES.get(slug, 2 * interval_minutes(slug))
    return timedelta(minutes=minutes)


def check_settings() -> None:
    """Refuse per-provider settings that name no registered provider (a typo never schedules)."""
    for name in ("REFRESH_INTERVALS", "REFRESH_STALE_AFTER_MINUTES"):
        for slug in getattr(settings, name):
            if resolve(slug) != slug or slug not in SCRAPERS:
                raise ImproperlyConfigured(
                    f"{name} names {slug!r}, which is not a registered provider "
                    f"({', '.join(sorted(SCRAPERS))})"
                )


def beat_schedule() -> dict[str, dict]:
    """Celery beat entries: each registered provider at its interval, and the freshness check."""
    check_settings()
    schedule: dict[str, dict] = {}
    for slug in sorted(SCRAPERS):
        every = timedelta(minutes=interval_minutes(slug))
        schedule[f"refresh-{slug}"] = {
            "task": REFRESH_TASK,
            "schedule": every,
            "args": (slug,),
            "kwargs": {"trigger": "schedule"},
            # A run still queued when the next one is due is dropped, not piled up.
            "options": {"expires": every.total_seconds()},
        }
    # The ECB publishes its reference rates once each working day, around 16:00 CET.
    every = timedelta(minutes=settings.REFRESH_RATES_MINUTES)
    schedule["refresh-rates"] = {
        "task": REFRESH_RATES_TASK,
        "schedule": every,
        "options": {"expires": every.total_seconds()},
    }
    # The data dump at /data/ (offerings/dumps): a snapshot of the data as it stands, daily.
    every = timedelta(minutes=settings.DUMP_INTERVAL_MINUTES)
    schedule["publish-dump"] = {
        "task": PUBLISH_DUMP_TASK,
        "schedule": every,
        "options": {"expires": every.total_seconds()},
    }
    every = timedelta(minutes=settings.REFRESH_CHECK_MINUTES)
    schedule["check-freshness"] = {
        "task": CHECK_FRESHNESS_TASK,
        "schedule": every,
        "options": {"expires": every.total_seconds()},
    }
    return schedule


def worst_http_request_seconds() -> float:
    """The longest one request can take before the client gives up, retries included."""
    timeout = http.TIMEOUT
    per_attempt = sum(t or 0 for t in (timeout.connect, timeout.read, timeout.write, timeout.pool))
    longest_wait = max(http.BACKOFF_CAP_S, http.RETRY_AFTER_CAP_S)
    return http.MAX_ATTEMPTS * per_attempt + (http.MAX_ATTEMPTS - 1) * longest_wait


@dataclass(frozen=True)
class TimeoutChain:
    http_request_s: float
    soft_limit_s: int
    hard_limit_s: int
    lock_timeout_s: int
    visibility_timeout_s: int
    retry_backoff_max_s: int

    def problems(self) -> list[str]:
        links = [
            ("the worst HTTP request (timeouts x attempts + backoff)", self.http_request_s),
            ("REFRESH_SOFT_TIME_LIMIT_SECONDS", self.soft_limit_s),
            ("REFRESH_HARD_TIME_LIMIT_SECONDS", self.hard_limit_s),
            ("the refresh lock timeout (hard limit + margin)", self.lock_timeout_s),
            ("CELERY_VISIBILITY_TIMEOUT_SECONDS", self.visibility_timeout_s),
        ]
        found = [
            f"{inner} ({inner_s:g} s) must be shorter than {outer} ({outer_s:g} s)"
            for (inner, inner_s), (outer, outer_s) in pairwise(links)
            if not inner_s < outer_s
        ]
        if not self.retry_backoff_max_s < self.visibility_timeout_s:
            found.append(
                f"REFRESH_RETRY_BACKOFF_MAX_SECONDS ({self.retry_backoff_max_s} s) must be "
                f"shorter than CELERY_VISIBILITY_TIMEOUT_SECONDS ({self.visibility_timeout_s} s)"
            )
        return found

    def check(self) -> None:
        problems = self.problems()
        if problems:
            raise ImproperlyConfigured("timeout chain broken: " + "; ".join(problems))


def timeout_chain() -> TimeoutChain:
    hard = settings.REFRESH_HARD_TIME_LIMIT_SECONDS
    return TimeoutChain(
        http_request_s=worst_http_request_seconds(),
        soft_limit_s=settings.REFRESH_SOFT_TIME_LIMIT_SECONDS,
        hard_limit_s=hard,
        lock_timeout_s=hard + LOCK_MARGIN_SECONDS,
        visibility_timeout_s=settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"],
        retry_backoff_max_s=settings.REFRESH_RETRY_BACKOFF_MAX_SECONDS,
    )
