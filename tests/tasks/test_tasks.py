"""The refresh tasks run through `.apply()` (never global eager mode): locks, retries, limits."""

from __future__ import annotations

import logging
from datetime import timedelta

from billiard.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded
from django.core.cache import cache
from django.db import OperationalError
from django.utils import timezone

from offerings import writer
from offerings.models import Provider, RefreshHealth, ScrapeRun
from providers import locks, logcontext, refresh
from providers.logcontext import RefreshContextFilter
from providers.registry import SCRAPERS
from providers.tasks import check_freshness, refresh_all, refresh_provider, retry_countdown

LAMBDA_REGIONS = "https://cloud.lambda.ai/api/v1/regions"


def runs(slug: str) -> list[ScrapeRun]:
    return list(ScrapeRun.objects.filter(provider__slug=slug).order_by("started_at", "pk"))


def test_a_refresh_task_ingests_a_replayed_provider_and_records_its_run(catalog, replay_dir):
    replay_dir("lambda")

    result = refresh_provider.apply(args=["lambda"], kwargs={"trigger": "schedule"})

    assert result.get() == "succeeded"
    [run] = runs("lambda")
    assert (run.status, run.trigger, run.task_id) == ("succeeded", "schedule", result.id)
    assert run.created > 0
    assert cache.get(locks.lock_key("lambda")) is None, "the lock is released"
    assert RefreshHealth.objects.get(provider__slug="lambda").state == "ok"


def test_an_unknown_provider_is_refused_with_a_log_line(catalog, caplog):
    result = refresh_provider.apply(args=["nosuchcloud"])

    assert result.get() == "unknown provider"
    assert "no scraper is registered for 'nosuchcloud'" in caplog.text


def test_an_overlapping_refresh_skips_with_a_clear_log_line(catalog, replay_dir, caplog):
    replay_dir("lambda")
    cache.add(locks.lock_key("lambda"), "another-task", 60)

    with caplog.at_level(logging.INFO, logger="providers.tasks"):
        result = refresh_provider.apply(args=["lambda"])

    assert result.get() == "skipped: already running"
    assert "a refresh of lambda is already running: this task skips" in caplog.text
    assert runs("lambda") == []
    assert cache.get(locks.lock_key("lambda")) == "another-task", "never released by the skipper"


def test_a_redelivered_task_closes_its_lost_run_takes_its_lock_over_and_completes(
    catalog, replay_dir
):
    replay_dir("lambda")
    lambda_ = Provider.objects.get(slug="lambda")
    lost = writer.start_scrape_run(lambda_, "schedule", task_id="task-1")
    cache.add(locks.lock_key("lambda"), "task-1", 60)  # the lost delivery's lock
    locks.count_delivery("task-1", 0, 60)  # ... and its delivery

    result = refresh_provider.apply(args=["lambda"], task_id="task-1")

    assert result.get() == "succeeded"
    lost.refresh_from_db()
    assert lost.status == "failed"
    assert "worker was lost mid-run" in lost.error_messages[-1]
    assert [r.status for r in runs("lambda")] == ["failed", "succeeded"]
    assert {r.task_id for r in runs("lambda")} == {"task-1"}


def test_a_task_redelivered_too_often_is_given_up_with_a_failed_run(catalog, replay_dir, settings):
    replay_dir("lambda")
    for _ in range(1 + settings.REFRESH_MAX_REDELIVERIES):
        locks.count_delivery("task-2", 0, 60)

    result = refresh_provider.apply(args=["lambda"], task_id="task-2")

    assert result.get() == "gave up"
    [run] = runs("lambda")
    assert run.status == "failed"
    assert (
        f"gave up after {2 + settings.REFRESH_MAX_REDELIVERIES} deliveries"
        in (run.error_messages[-1])
    )
    assert RefreshHealth.objects.get(provider__slug="lambda").state == "failing"


def test_a_network_failure_is_retried_with_backoff_until_the_retries_run_out(
    catalog, replay_dir, settings, caplog
):
    # Every attempt of the client (4) fails to connect, on every task attempt.
    replay_dir("lambda", [{"url": LAMBDA_REGIONS, "error": "connect"}] * 4)

    with caplog.at_level(logging.WARNING, logger="providers.tasks"):
        result = refresh_provider.apply(args=["lambda"])

    assert result.get() == "failed"
    attempts = runs("lambda")
    assert len(attempts) == 1 + settings.REFRESH_MAX_RETRIES
    assert [r.retry_scheduled for r in attempts] == [True] * settings.REFRESH_MAX_RETRIES + [False]
    assert all("failed (after retries): ConnectError" in r.error_messages[-1] for r in attempts)
    assert "transient failure, retry 1 of 3 in" in caplog.text
    assert "no retries left" in caplog.text
    # Only the final failure counts for the curators.
    assert RefreshHealth.objects.get(provider__slug="lambda").last_run == attempts[-1]


def test_a_missing_recording_fails_at_once_without_retries(catalog, replay_dir):
    replay_dir("lambda", [{"url": "https://cloud.lambda.ai/api/v1/elsewhere", "status": 200}])

    result = refresh_provider.apply(args=["lambda"])

    assert result.get() == "failed"
    [run] = runs("lambda")
    assert "no recorded response left" in run.error_messages[-1]
    assert not run.retry_scheduled


def test_a_database_error_is_retried_and_the_retry_completes(catalog, replay_dir, monkeypatch):
    replay_dir("lambda")
    real = refresh.refresh_from_source
    calls = []

    def flaky(*args, **kwargs):
        calls.append(kwargs["task_id"])
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return real(*args, **kwargs)

    monkeypatch.setattr(refresh, "refresh_from_source", flaky)

    result = refresh_provider.apply(args=["lambda"])

    assert result.get() == "succeeded"
    assert len(calls) == 2
    assert [r.status for r in runs("lambda")] == ["succeeded"]


def test_a_run_the_database_error_left_running_is_closed_when_the_retry_starts(
    catalog, replay_dir, monkeypatch
):
    replay_dir("lambda")
    real = refresh.refresh_from_source
    calls = []

    def dies_mid_run(slug, *, trigger, task_id, replay_dir):
        calls.append(task_id)
        if len(calls) == 1:  # the run record was written, then the database went away
            writer.start_scrape_run(Provider.objects.get(slug=slug), trigger, task_id=task_id)
            raise OperationalError("server closed the connection unexpectedly")
        return real(slug, trigger=trigger, task_id=task_id, replay_dir=replay_dir)

    monkeypatch.setattr(refresh, "refresh_from_source", dies_mid_run)

    assert refresh_provider.apply(args=["lambda"]).get() == "succeeded"
    lost, done = sorted(runs("lambda"), key=lambda run: run.pk)
    assert (lost.status, done.status) == ("failed", "succeeded")
    assert lost.task_id == done.task_id == calls[0]
    assert "the task was retried" in lost.error_messages[0]


def test_the_soft_time_limit_closes_the_run_as_failed(catalog, monkeypatch):
    def slow(slug, *, trigger, task_id, replay_dir):
        writer.start_scrape_run(Provider.objects.get(slug=slug), trigger, task_id=task_id)
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(refresh, "refresh_from_source", slow)

    result = refresh_provider.apply(args=["aws"])

    assert result.get() == "failed"
    [run] = runs("aws")
    assert run.status == "failed"
    assert run.error_messages == [
        f"stopped at the soft time limit ({refresh_provider.soft_time_limit} s)"
    ]


def test_a_run_killed_at_the_hard_time_limit_is_closed_by_the_worker(catalog):
    aws = Provider.objects.get(slug="aws")
    run = writer.start_scrape_run(aws, "schedule", task_id="task-hard")

    refresh_provider.on_failure(TimeLimitExceeded(960), "task-hard", ("aws",), {}, None)

    run.refresh_from_db()
    assert run.status == "failed"
    assert "killed at the hard time limit" in run.error_messages[-1]


def test_the_freshness_check_closes_task_runs_no_task_can_still_hold(catalog):
    aws = Provider.objects.get(slug="aws")
    long_ago = timezone.now() - timedelta(hours=2)
    stuck = writer.start_scrape_run(aws, "schedule", now=long_ago, task_id="task-gone")
    by_hand = writer.start_scrape_run(aws, "command", now=long_ago)
    recent = writer.start_scrape_run(aws, "schedule", task_id="task-busy")

    check_freshness.apply().get()

    for run in (stuck, by_hand, recent):
        run.refresh_from_db()
    assert stuck.status == "failed"
    assert "never finished" in stuck.error_messages[-1]
    assert (by_hand.status, recent.status) == ("running", "running")


def test_the_freshness_check_judges_every_registered_provider(catalog):
    states = check_freshness.apply().get()

    assert set(states) == {p for p in SCRAPERS if Provider.objects.filter(slug=p).exists()}
    assert set(states.values()) == {"pending"}


def test_backoff_grows_exponentially_is_capped_and_jittered(settings):
    settings.REFRESH_RETRY_BACKOFF_SECONDS = 60
    settings.REFRESH_RETRY_BACKOFF_MAX_SECONDS = 1800

    assert [retry_countdown(n, rng=lambda: 0.0) for n in range(4)] == [30, 60, 120, 240]
    assert [retry_countdown(n, rng=lambda: 1.0) for n in range(4)] == [60, 120, 240, 480]
    assert retry_countdown(10, rng=lambda: 1.0) == 1800
    assert retry_countdown(10, rng=lambda: 0.0) == 900


# -- fan-out ----------------------------------------------------------------------------------------


def test_refresh_all_queues_one_refresh_per_registered_provider_after_commit(
    db, memory_broker, settings, django_capture_on_commit_callbacks
):
    settings.REFRESH_REPLAY_DIR = ""

    with django_capture_on_commit_callbacks() as callbacks:
        assert refresh_all.apply().get() == sorted(SCRAPERS)
        assert memory_broker.sent() == [], "nothing is sent before the commit"
    for callback in callbacks:
        callback()

    sent = memory_broker.sent()
    assert [(m["task"], m["args"], m["kwargs"]) for m in sent] == [
        ("providers.tasks.refresh_provider", [slug], {"trigger": "all"})
        for slug in sorted(SCRAPERS)
    ]


def test_refresh_all_over_a_replay_folder_queues_only_the_providers_it_holds(
    db, memory_broker, replay_dir, django_capture_on_commit_callbacks
):
    replay_dir("azure")
    replay_dir("lambda")
    replay_dir("nosuchcloud", [])

    with django_capture_on_commit_callbacks(execute=True):
        refresh_all.apply()

    assert [m["args"] for m in memory_broker.sent()] == [["azure"], ["lambda"]]


# -- the lock itself --------------------------------------------------------------------------------


def test_the_lock_is_released_only_by_the_token_that_holds_it():
    with locks.provider_lock("aws", "token-a", 60) as first:
        with locks.provider_lock("aws", "token-b", 60) as second:
            assert (first, second) == (True, False)
        assert cache.get(locks.lock_key("aws")) == "token-a"
        assert not locks.release(locks.lock_key("aws"), "token-b")
    assert cache.get(locks.lock_key("aws")) is None


def test_deliveries_are_counted_per_task_attempt():
    assert [locks.count_delivery("t", 0, 60) for _ in range(3)] == [1, 2, 3]
    assert locks.count_delivery("t", 1, 60) == 1, "a retry is a new attempt"


def test_log_lines_of_a_refresh_carry_its_provider_run_and_task_and_no_later_line_does(
    catalog, replay_dir
):
    replay_dir("lambda")
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    handler.addFilter(RefreshContextFilter())  # as LOGGING installs it on the console handler
    tasks_logger = logging.getLogger("providers.tasks")
    tasks_logger.addHandler(handler)
    try:
        result = refresh_provider.apply(args=["lambda"])
        tasks_logger.warning("after the refresh")
    finally:
        tasks_logger.removeHandler(handler)

    [run] = runs("lambda")
    done = next(r for r in records if r.getMessage().startswith("refresh succeeded"))
    assert done.refresh == f" [provider=lambda run={run.pk} task={result.id}]"
    assert (done.refresh_provider, done.refresh_run_id) == ("lambda", run.pk)
    assert records[-1].refresh == ""
    assert logcontext.current() == {}
