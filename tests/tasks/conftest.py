"""Fixtures for the Celery tasks: replay folders, the scraped providers' catalog, a memory broker."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.core.cache import cache

from gpucatalog.celery import app as celery_app
from tests.providers.conftest import RECORDINGS, load_scraped_providers


@pytest.fixture
def catalog(db):
    """The curated catalog of the providers with recordings (aws, azure, lambda)."""
    load_scraped_providers()


@pytest.fixture
def replay_dir(tmp_path, settings):
    """A replay folder the tasks read (REFRESH_REPLAY_DIR) holding the named recordings."""
    folder = tmp_path / "replay"
    folder.mkdir()
    settings.REFRESH_REPLAY_DIR = str(folder)

    def add(slug: str, manifest: list[dict] | None = None) -> Path:
        if manifest is None:
            (folder / slug).symlink_to(RECORDINGS / slug, target_is_directory=True)
        else:
            (folder / slug).mkdir()
            (folder / slug / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        return folder / slug

    return add


@pytest.fixture(autouse=True)
def no_ambient_broker(monkeypatch) -> None:
    """Celery prefers the CELERY_BROKER_URL environment variable over any configured broker.

    CI exports one for the whole run; left in place it would route these tests' messages to
    that broker instead of the one each test chose (a memory broker, an unreachable one, or the
    end-to-end worker's own Redis database).
    """
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)


@pytest.fixture(autouse=True)
def private_cache(settings) -> None:
    """Locks and delivery counters in a cache of this test's own (never a shared Redis DB)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "tasks-tests",
        }
    }
    cache.clear()


def redis_url(db: int | None = None) -> str:
    """The Redis at REDIS_URL (default 127.0.0.1:6379), on database `db` if given."""
    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    if db is None:
        return url
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{db}"))


def require_redis(url: str) -> None:
    redis = pytest.importorskip("redis")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        pytest.skip(f"needs a Redis server at {url} (REDIS_URL): {exc}")


class MemoryBroker:
    """Celery's app pointed at kombu's in-memory transport; reads back what was sent."""

    def __init__(self, app) -> None:
        self.app = app

    def sent(self) -> list[dict]:
        """Every message waiting in the default queue (taken off it): task name, args, kwargs."""
        found = []
        with self.app.connection_for_read() as conn:
            queue = conn.SimpleQueue("celery", no_ack=True)
            while True:
                try:
                    message = queue.get(block=False)
                except queue.Empty:
                    break
                args, kwargs, _ = message.decode()
                found.append({"task": message.headers["task"], "args": args, "kwargs": kwargs})
            queue.close()
        return found


def _reset_pools(app) -> None:
    app._pool = None
    amqp = app.__dict__.get("amqp")
    if amqp is not None:
        amqp._producer_pool = None


@pytest.fixture
def memory_broker(settings) -> Iterator[MemoryBroker]:
    """A configured broker that keeps messages in this process (not eager mode: real sends)."""
    settings.CELERY_BROKER_URL = "memory://"
    previous = celery_app.conf.broker_url
    celery_app.conf.broker_url = "memory://"
    _reset_pools(celery_app)
    broker = MemoryBroker(celery_app)
    broker.sent()  # start empty
    try:
        yield broker
    finally:
        celery_app.conf.broker_url = previous
        _reset_pools(celery_app)
