"""A whole worker (main process and pool child) killed in the middle of an upsert.

tests/tasks/test_worker_e2e.py kills only the pool child, whose main process then rejects the
message at once. Here nothing survives to say anything: the message stays unacknowledged in
Redis until the broker's visibility timeout, after which a new worker gets it again.
"""

from __future__ import annotations

import time

import pytest
from django.db import connection

from offerings.models import Offer, PriceObservation, ScrapeRun
from tests.providers.conftest import load_scraped_providers
from tests.survival.conftest import database_url, figure, send, wait_for
from tests.tasks.test_worker_e2e import finished, replay_in_process, scraper_history_duplicates

pytestmark = [pytest.mark.redis, pytest.mark.django_db(transaction=True)]

VISIBILITY_TIMEOUT_S = 3


def open_transactions() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state = 'idle in transaction'"
        )
        return cursor.fetchone()[0]


def test_a_whole_worker_killed_mid_upsert_writes_nothing_and_a_new_worker_completes_the_task(
    redis_server, celeries, replay_folder, tmp_path
):
    deadline = time.monotonic() + 60
    load_scraped_providers()
    azure_offers = Offer.objects.filter(instance__provider__slug="azure")
    offers_before = azure_offers.count()
    history_before = PriceObservation.objects.count()
    broker, pause = redis_server.url(), tmp_path / "paused.pid"
    first = celeries.start(
        "worker",
        broker,
        database_url(),
        REFRESH_REPLAY_DIR=str(replay_folder),
        REFRESH_TEST_PAUSE_FILE=str(pause),
        REFRESH_TEST_PAUSE_SECONDS="60",
    )

    task_id = send(broker, "providers.tasks.refresh_provider", "azure", trigger="schedule")

    wait_for(lambda: pause.exists() and pause.read_text().strip(), "the pause", deadline, [first])
    assert open_transactions() == 1, "the upsert's transaction is open"
    [running] = ScrapeRun.objects.filter(provider__slug="azure")
    assert (running.status, running.task_id) == ("running", task_id)

    first.kill()  # SIGKILL to the main process and its child at once
    killed_at = time.monotonic()
    wait_for(lambda: not first.group_alive(), "no process of the first worker left", deadline)
    wait_for(lambda: open_transactions() == 0, "PostgreSQL to roll the upsert back", deadline)
    assert PriceObservation.objects.count() == history_before, "no partial write"
    assert azure_offers.count() == offers_before

    second = celeries.start(
        "worker",
        broker,
        database_url(),
        REFRESH_REPLAY_DIR=str(replay_folder),
        SURVIVAL_VISIBILITY_TIMEOUT_SECONDS=str(VISIBILITY_TIMEOUT_S),
    )
    wait_for(lambda: finished(["azure"]), "the redelivered refresh", deadline, [second])
    figure(
        "whole worker SIGKILL -> redelivered run done (visibility timeout 3 s)",
        time.monotonic() - killed_at,
    )

    lost, done = ScrapeRun.objects.filter(provider__slug="azure").order_by("started_at", "pk")
    assert lost.pk == running.pk
    assert lost.status == "failed"
    assert "its worker was lost mid-run; the task was redelivered (1x)" in lost.error_messages[-1]
    assert (done.status, done.task_id) == ("succeeded", task_id), "the same task, redelivered"
    assert not PriceObservation.objects.filter(run=lost).exists(), "the killed run wrote nothing"
    assert azure_offers.count() == offers_before + done.created, "no duplicate offer"
    assert scraper_history_duplicates() == [], "no duplicate price rows"
    # The same snapshot again: the redelivered run left the catalog exactly current.
    again = replay_in_process(replay_folder)["azure"]
    assert (again.status, again.created, again.updated) == ("succeeded", 0, 0)
    assert "taking over the lock an earlier delivery of this task left" in second.text()
