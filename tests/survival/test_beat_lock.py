"""Two real `celery beat` processes on one Redis: only the lock holder sends, the other stands by."""

from __future__ import annotations

import re
import time
from datetime import datetime
from itertools import pairwise

import pytest

from tests.survival.conftest import beat_schedule_env, figure, wait_for

pytestmark = pytest.mark.redis

TASK = "providers.tasks.check_freshness"
EVERY_S = 1.0
SENT = re.compile(r"^(\S+ \S+) INFO celery\.beat Scheduler: Sending due task survival ", re.M)


def sends(beat) -> list[datetime]:
    """When this beat sent the entry, from its log lines."""
    return [datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f") for stamp in SENT.findall(beat.text())]


def queued(client) -> int:
    """Messages waiting in the default queue (no worker consumes them here)."""
    return client.llen("celery")


def test_two_beats_never_both_send_and_the_standby_takes_over_when_the_holder_is_killed(
    redis_server, celeries
):
    import redis

    deadline = time.monotonic() + 45
    broker = redis_server.url()
    client = redis.Redis.from_url(broker)
    schedule = beat_schedule_env(EVERY_S, TASK)
    first = celeries.start("beat", broker, "postgres://unused@127.0.0.1:1/unused", **schedule)
    wait_for(
        lambda: "acquired the lock" in first.text(), "the first beat's lock", deadline, [first]
    )
    second = celeries.start("beat", broker, "postgres://unused@127.0.0.1:1/unused", **schedule)
    wait_for(
        lambda: "standing by" in second.text(), "the second beat to stand by", deadline, [second]
    )

    # Both run for a while: the entry is due every second, and only the holder sends it.
    wait_for(lambda: len(sends(first)) >= 6, "six sends", deadline, [first, second])
    assert sends(second) == []
    assert "acquired the lock" not in second.text()
    wait_for(lambda: queued(client) == len(sends(first)), "every send in the queue", deadline)

    first.kill()  # SIGKILL: no chance to release the lock; it expires (3 s) and the standby takes it
    killed_at = time.monotonic()
    wait_for(lambda: "acquired the lock" in second.text(), "the takeover", deadline, [second])
    figure(
        "beat holder SIGKILL -> standby holds the lock (lock timeout 3 s)",
        time.monotonic() - killed_at,
    )
    wait_for(lambda: len(sends(second)) >= 3, "the standby's sends", deadline, [second])

    second.stop()  # a clean stop releases the lock
    assert "released the lock" in second.text()

    every = sorted(sends(first) + sends(second))
    gaps = [(b - a).total_seconds() for a, b in pairwise(every)]
    assert min(gaps) >= 0.8 * EVERY_S, f"an entry was sent twice within a second: {gaps}"
    assert max(gaps) <= 3 + 1 + 1.5, f"the takeover took longer than lock + tick: {gaps}"
    assert queued(client) == len(every), "every message in the queue came from one of the beats"
    assert client.get("redbeat::lock") is None
    client.close()
