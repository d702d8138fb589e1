"""`/healthz`: the database and the broker, each checked for real, 503 when a configured one is down."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.test import override_settings

from tests.tasks.conftest import redis_url, require_redis

HEALTH_REDIS_DB = 12


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts connections and never answers: a hung broker."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def test_a_broker_that_refuses_connections_makes_the_check_fail_with_503(client, db):
    with override_settings(CELERY_BROKER_URL=f"redis://127.0.0.1:{closed_port()}/0"):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "error",
        "checks": {"database": "ok", "broker": "error: ConnectionError"},
    }


def test_a_broker_that_never_answers_fails_the_check_within_about_a_second(
    client, db, silent_server
):
    started = time.monotonic()
    with override_settings(CELERY_BROKER_URL=f"redis://127.0.0.1:{silent_server}/0"):
        response = client.get("/healthz")
    assert time.monotonic() - started < 3
    assert response.status_code == 503
    assert response.json()["checks"]["broker"] == "error: TimeoutError"


def test_the_error_never_shows_the_broker_url_or_its_password(client, db):
    url = f"redis://:s3cret-{uuid.uuid4().hex}@127.0.0.1:{closed_port()}/0"
    with override_settings(CELERY_BROKER_URL=url):
        body = client.get("/healthz").content.decode()
    assert "s3cret" not in body
    assert "127.0.0.1" not in body


@pytest.mark.redis
def test_a_reachable_broker_is_pinged_and_reported_ok(client, db):
    url = redis_url(HEALTH_REDIS_DB)
    require_redis(url)
    with override_settings(CELERY_BROKER_URL=url):
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "broker": "ok"}}


def test_the_health_check_is_never_cached_nor_rate_limited(client, db):
    limits = {
        "RATELIMIT_ENABLE": True,
        "API_RATE": "1/m",
        "FEED_RATE": "1/m",
        "PAGE_CACHE_SECONDS": 300,
        "CACHES": settings.CACHES
        | {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
    }
    down = f"redis://127.0.0.1:{closed_port()}/0"
    with override_settings(**limits):
        with override_settings(CELERY_BROKER_URL=None):
            answers = [client.get("/healthz") for _ in range(5)]
        with override_settings(CELERY_BROKER_URL=down):
            after_the_broker_went_down = client.get("/healthz")
    assert [a.status_code for a in answers] == [200] * 5
    assert "no-cache" in answers[0]["Cache-Control"]
    assert "no-store" in answers[0]["Cache-Control"]
    assert after_the_broker_went_down.status_code == 503, "not a cached 200"


def test_the_health_check_answers_only_safe_methods(client, db):
    assert client.post("/healthz").status_code == 405
    assert client.head("/healthz").status_code == 200
