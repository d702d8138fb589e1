"""A real Celery worker (prefork, one child) against Redis and the test database, end to end.

The worker is a separate process started with `celery -A gpucatalog worker`: it reads the test
database through DATABASE_URL (rows are committed: transactional tests), its broker and cache are
a dedicated Redis database (flushed before and after), and its scrapers are served recorded
exchanges through REFRESH_REPLAY_DIR. Skipped with the reason when Redis is not reachable.
Every test is bounded in time and kills the worker in a `finally`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from io import StringIO
from pathlib import Path
from urllib.parse import quote

import pytest
from celery import Celery
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.db.models import Count

from offerings.models import Offer, PriceObservation, ScrapeRun
from tests.providers.conftest import RECORDINGS, load_scraped_providers
from tests.providers.test_aws import EXPECTED as AWS_EXPECTED
from tests.tasks.conftest import redis_url, require_redis

pytestmark = [pytest.mark.redis, pytest.mark.django_db(transaction=True)]

# A Redis database of these tests' own: broker queues, locks and delivery counters.
E2E_REDIS_DB = 15
REPLAYED = ("aws", "azure", "lambda")
DEADLINE_S = 50


@pytest.fixture
def broker() -> Iterator[str]:
    import redis

    url = redis_url(E2E_REDIS_DB)
    require_redis(url)
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield url
    finally:
        client.flushdb()
        client.close()


@pytest.fixture
def replay_folder(tmp_path) -> Path:
    folder = tmp_path / "replay"
    folder.mkdir()
    for slug in REPLAYED:
        (folder / slug).symlink_to(RECORDINGS / slug, target_is_directory=True)
    return folder


def worker_database_url() -> str:
    """The test database pytest-django created, as a DATABASE_URL the worker can use."""
    db = connection.settings_dict
    credentials = quote(db["USER"] or "", safe="")
    if db["PASSWORD"]:
        credentials += ":" + quote(db["PASSWORD"], safe="")
    host = db["HOST"] or "127.0.0.1"
    return f"postgres://{credentials}@{host}:{db['PORT'] or 5432}/{db['NAME']}"


class Worker:
    """`celery worker --pool=prefork -c 1` in its own process group, its output in a file."""

    def __init__(self, broker: str, log: Path, **env: str) -> None:
        self.log = log
        environment = {
            k: v for k, v in os.environ.items() if not k.startswith(("REFRESH_", "CELERY_"))
        } | {
            "DJANGO_ENV": "test",
            "DJANGO_SETTINGS_MODULE": "gpucatalog.settings",
            "DATABASE_URL": worker_database_url(),
            "CELERY_BROKER_URL": broker,
            "REDIS_URL": broker,
            "LOG_LEVEL": "INFO",
            **env,
        }
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "gpucatalog",
            "worker",
            "--pool=prefork",
            "--concurrency=1",
            "--loglevel=INFO",
            "--without-mingle",
            "--without-gossip",
            "--without-heartbeat",
            f"--hostname=e2e-{uuid.uuid4().hex[:8]}@%h",
        ]
        self.output = log.open("wb")
        self.process = subprocess.Popen(
            command,
            cwd=settings.BASE_DIR,
            env=environment,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the pool children die with it
        )

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # any child left behind
        self.process.wait(timeout=5)
        self.output.close()


@pytest.fixture
def start_worker(broker, tmp_path) -> Iterator[Callable[..., Worker]]:
    workers: list[Worker] = []

    def start(**env: str) -> Worker:
        worker = Worker(broker, tmp_path / f"worker-{len(workers)}.log", **env)
        workers.append(worker)
        return worker

    try:
        yield start
    finally:
        for worker in workers:
            worker.stop()


def send(broker: str, name: str, *args, **kwargs) -> None:
    """Send a task by name the way the admin and beat do (a producer of the same broker)."""
    with Celery("e2e-sender", broker=broker, set_as_current=False) as sender:
        sender.send_task(name, args=args, kwargs=kwargs)


def wait_for(condition: Callable[[], object], worker: Worker, what: str, deadline: float):
    while time.monotonic() < deadline:
        if found := condition():
            return found
        if worker.process.poll() is not None:
            pytest.fail(f"the worker exited ({worker.process.returncode}):\n{worker.text()}")
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}; worker output:\n{worker.text()[-6000:]}")


def finished(slugs) -> bool:
    done = ScrapeRun.objects.filter(provider__slug__in=slugs, status="succeeded")
    return set(done.values_list("provider__slug", flat=True)) == set(slugs)


def replay_in_process(folder: Path) -> dict[str, ScrapeRun]:
    """The same recordings through refresh_prices here: what the worker wrote must be current."""
    before = set(ScrapeRun.objects.values_list("pk", flat=True))
    call_command("refresh_prices", "--replay", str(folder), stdout=StringIO())
    return {
        run.provider.slug: run
        for run in ScrapeRun.objects.exclude(pk__in=before).select_related("provider")
    }


def scraper_history_duplicates() -> list:
    """Offers with more than one price-history row written by refresh runs."""
    return list(
        PriceObservation.objects.filter(run__isnull=False)
        .values("offer")
        .annotate(rows=Count("id"))
        .filter(rows__gt=1)
    )


def test_a_real_worker_refreshes_every_replayed_provider_with_exact_prices(
    broker, start_worker, replay_folder
):
    deadline = time.monotonic() + DEADLINE_S
    load_scraped_providers()
    worker = start_worker(REFRESH_REPLAY_DIR=str(replay_folder))

    send(broker, "providers.tasks.refresh_all")

    wait_for(lambda: finished(REPLAYED), worker, "a good run of each provider", deadline)
    runs = list(ScrapeRun.objects.filter(provider__slug__in=REPLAYED).order_by("pk"))
    assert sorted((r.provider.slug, r.status, r.trigger) for r in runs) == [
        (slug, "succeeded", "all") for slug in REPLAYED
    ]
    assert all(run.task_id for run in runs)
    assert all(run.created + run.updated > 0 for run in runs)
    offers = Offer.objects.filter(instance__provider__slug="aws", origin="scraper")
    for slug, region, price, per_gpu in AWS_EXPECTED:
        offer = offers.get(instance__slug=slug, region__code=region, kind="on-demand")
        assert (offer.price_per_hour, offer.price_per_gpu_hour_usd) == (
            Decimal(price),
            Decimal(per_gpu),
        )
    # The same snapshot again, in this process: nothing left to create or change.
    again = replay_in_process(replay_folder)
    assert {s: (r.status, r.created, r.updated) for s, r in again.items()} == {
        slug: ("succeeded", 0, 0) for slug in REPLAYED
    }
    assert scraper_history_duplicates() == []
    # Structured logs: each refresh's lines name its provider, run and task.
    [aws_run] = [r for r in runs if r.provider.slug == "aws"]
    assert f"[provider=aws run={aws_run.pk} task={aws_run.task_id}]" in worker.text()


def test_a_worker_killed_mid_upsert_loses_and_duplicates_nothing_and_the_redelivery_completes(
    broker, start_worker, replay_folder, tmp_path
):
    deadline = time.monotonic() + DEADLINE_S
    load_scraped_providers()
    azure_offers = Offer.objects.filter(instance__provider__slug="azure")
    offers_before = azure_offers.count()
    scraped = azure_offers.filter(origin="scraper")
    history_before = PriceObservation.objects.count()
    pause = tmp_path / "paused.pid"
    worker = start_worker(
        REFRESH_REPLAY_DIR=str(replay_folder),
        REFRESH_TEST_PAUSE_FILE=str(pause),
        REFRESH_TEST_PAUSE_SECONDS="30",
    )

    send(broker, "providers.tasks.refresh_provider", "azure", trigger="schedule")

    # The child has staged and merged azure's offers and sleeps before its commit.
    child = int(
        wait_for(
            lambda: pause.exists() and pause.read_text().strip(), worker, "the pause", deadline
        )
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state = 'idle in transaction'"
        )
        assert cursor.fetchone()[0] == 1, "the upsert's transaction is open"
    assert scraped.count() == 0, "nothing of it is visible before the commit"
    assert PriceObservation.objects.count() == history_before
    [running] = ScrapeRun.objects.filter(provider__slug="azure")
    assert running.status == "running"

    os.kill(child, signal.SIGKILL)

    wait_for(lambda: finished(["azure"]), worker, "the redelivered refresh", deadline)
    lost, done = ScrapeRun.objects.filter(provider__slug="azure").order_by("started_at", "pk")
    assert lost.pk == running.pk
    assert lost.status == "failed"
    assert "its worker was lost mid-run; the task was redelivered (1x)" in lost.error_messages[-1]
    assert (done.status, done.task_id) == ("succeeded", lost.task_id), "the same task, redelivered"
    assert not PriceObservation.objects.filter(run=lost).exists(), "the killed run wrote nothing"
    assert azure_offers.count() == offers_before + done.created, "no duplicate offer"
    assert scraped.count() == done.created + done.updated
    assert scraper_history_duplicates() == []
    # The same snapshot again: the redelivered run left the catalog exactly current.
    again = replay_in_process(replay_folder)
    assert (again["azure"].status, again["azure"].created, again["azure"].updated) == (
        "succeeded",
        0,
        0,
    )
    log = worker.text()
    assert "SIGKILL" in log or "WorkerLostError" in log
    assert "taking over the lock an earlier delivery of this task left" in log
