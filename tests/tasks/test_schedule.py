"""The beat schedule names real tasks, covers every provider, and the timeout chain holds."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from django.core.exceptions import ImproperlyConfigured

from gpucatalog.celery import app as celery_app
from offerings.models import ScrapeRun
from providers import http, schedule
from providers.registry import SCRAPERS
from providers.tasks import check_freshness, refresh_all, refresh_provider


@pytest.fixture(scope="module")
def registered_tasks() -> set[str]:
    # What a worker does at start-up: import every app's tasks module.
    celery_app.loader.import_default_modules()
    return set(celery_app.tasks)


def test_every_scheduled_task_name_resolves_to_a_registered_task(registered_tasks):
    scheduled = celery_app.conf.beat_schedule

    assert scheduled, "beat has nothing to run"
    for name, entry in scheduled.items():
        assert entry["task"] in registered_tasks, f"{name} names an unknown task {entry['task']}"


def test_every_registered_provider_is_scheduled_once_at_its_interval():
    entries = [
        e for e in celery_app.conf.beat_schedule.values() if e["task"] == schedule.REFRESH_TASK
    ]

    assert sorted(e["args"][0] for e in entries) == sorted(SCRAPERS)
    for entry in entries:
        slug = entry["args"][0]
        assert entry["schedule"] == timedelta(minutes=schedule.interval_minutes(slug))
        assert entry["options"]["expires"] == entry["schedule"].total_seconds()


def test_the_freshness_check_is_scheduled(settings):
    entry = celery_app.conf.beat_schedule["check-freshness"]

    assert entry["task"] == schedule.CHECK_FRESHNESS_TASK
    assert entry["schedule"] == timedelta(minutes=settings.REFRESH_CHECK_MINUTES)


def test_the_task_names_the_admin_and_beat_send_are_the_tasks_names():
    assert refresh_provider.name == schedule.REFRESH_TASK
    assert refresh_all.name == schedule.REFRESH_ALL_TASK
    assert check_freshness.name == schedule.CHECK_FRESHNESS_TASK
    # The admin's "refresh now" sends the name it reads from the model, as the schedule does.
    assert refresh_provider.name == ScrapeRun.REFRESH_TASK


def test_a_per_provider_interval_overrides_the_default(settings):
    some = sorted(SCRAPERS)[0]
    settings.REFRESH_INTERVALS = {some: 30}
    settings.REFRESH_INTERVAL_MINUTES = 720

    built = schedule.beat_schedule()

    assert built[f"refresh-{some}"]["schedule"] == timedelta(minutes=30)
    others = [s for s in SCRAPERS if s != some]
    assert all(built[f"refresh-{s}"]["schedule"] == timedelta(minutes=720) for s in others)
    assert schedule.stale_after(some) == timedelta(minutes=60)


def test_a_stale_threshold_can_be_set_per_provider(settings):
    some = sorted(SCRAPERS)[0]
    settings.REFRESH_STALE_AFTER_MINUTES = {some: 24 * 60}

    assert schedule.stale_after(some) == timedelta(hours=24)


@pytest.mark.parametrize("setting", ["REFRESH_INTERVALS", "REFRESH_STALE_AFTER_MINUTES"])
def test_an_interval_for_an_unknown_provider_stops_start_up(settings, setting):
    setattr(settings, setting, {"nosuchcloud": 60})

    with pytest.raises(ImproperlyConfigured, match=f"{setting} names 'nosuchcloud'"):
        schedule.beat_schedule()


# -- the timeout chain -----------------------------------------------------------------------------


def test_the_timeout_chain_holds_with_the_configured_values():
    chain = schedule.timeout_chain()

    assert chain.problems() == []
    assert (
        chain.http_request_s
        < chain.soft_limit_s
        < chain.hard_limit_s
        < chain.lock_timeout_s
        < chain.visibility_timeout_s
    )
    assert chain.retry_backoff_max_s < chain.visibility_timeout_s


def test_the_worst_http_request_counts_every_attempt_and_every_wait():
    per_attempt = 10 + 60 + 30 + 10  # connect + read + write + pool, as http.TIMEOUT says
    waits = max(http.BACKOFF_CAP_S, http.RETRY_AFTER_CAP_S)

    assert schedule.worst_http_request_seconds() == (
        http.MAX_ATTEMPTS * per_attempt + (http.MAX_ATTEMPTS - 1) * waits
    )


def test_raising_an_http_timeout_without_raising_the_limits_breaks_the_chain(monkeypatch):
    monkeypatch.setattr(
        http, "TIMEOUT", httpx.Timeout(connect=10.0, read=300.0, write=30.0, pool=10)
    )

    with pytest.raises(ImproperlyConfigured, match=r"worst HTTP request .* must be shorter than"):
        schedule.timeout_chain().check()


def test_more_http_attempts_without_raising_the_limits_break_the_chain(monkeypatch):
    monkeypatch.setattr(http, "MAX_ATTEMPTS", 8)

    with pytest.raises(ImproperlyConfigured, match="REFRESH_SOFT_TIME_LIMIT_SECONDS"):
        schedule.timeout_chain().check()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"REFRESH_HARD_TIME_LIMIT_SECONDS": 900}, "REFRESH_SOFT_TIME_LIMIT_SECONDS \\(900 s\\)"),
        ({"REFRESH_HARD_TIME_LIMIT_SECONDS": 4000}, "lock timeout .* CELERY_VISIBILITY"),
        ({"REFRESH_RETRY_BACKOFF_MAX_SECONDS": 3600}, "REFRESH_RETRY_BACKOFF_MAX_SECONDS"),
        ({"CELERY_BROKER_TRANSPORT_OPTIONS": {"visibility_timeout": 600}}, "VISIBILITY"),
    ],
)
def test_limits_out_of_order_break_the_chain(settings, changes, message):
    for name, value in changes.items():
        setattr(settings, name, value)

    with pytest.raises(ImproperlyConfigured, match=message):
        schedule.timeout_chain().check()


def test_the_tasks_carry_the_limits_of_the_chain_and_late_acks(settings):
    chain = schedule.timeout_chain()

    assert refresh_provider.soft_time_limit == chain.soft_limit_s
    assert refresh_provider.time_limit == chain.hard_limit_s
    assert refresh_provider.acks_late is True
    assert refresh_provider.reject_on_worker_lost is True
    assert refresh_provider.max_retries == settings.REFRESH_MAX_RETRIES
    assert celery_app.conf.broker_transport_options == {
        "visibility_timeout": chain.visibility_timeout_s
    }
    assert celery_app.conf.worker_prefetch_multiplier == 1


def test_the_reference_rates_are_fetched_on_their_own_schedule(settings, registered_tasks):
    entry = celery_app.conf.beat_schedule["refresh-rates"]

    assert entry["task"] == schedule.REFRESH_RATES_TASK
    assert entry["task"] in registered_tasks
    assert entry["schedule"] == timedelta(minutes=settings.REFRESH_RATES_MINUTES)
