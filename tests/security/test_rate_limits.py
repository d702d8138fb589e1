"""Rate limits on the API, the feed and the correction form: 429 with Retry-After, never 500."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.core.cache import caches
from django.test import Client, override_settings
from django_ratelimit import core as ratelimit_core

from offerings import openapi

pytestmark = pytest.mark.django_db


@contextmanager
def limited_settings(cache: dict, **rates: str) -> Iterator[None]:
    """Limits on, counted in a cache of the test's own (so no count leaks between tests).

    Every count falls in the window of the second the block starts: a test whose requests
    straddled the end of a one-minute window would start counting again and fail by chance.
    """
    alias = f"ratelimit-{uuid.uuid4().hex[:8]}"
    start = time.time()
    real_window = ratelimit_core._get_window

    def window_at_start(value, period):
        with mock.patch("time.time", return_value=start):
            return real_window(value, period)

    with (
        override_settings(
            RATELIMIT_ENABLE=True,
            RATELIMIT_USE_CACHE=alias,
            CACHES=settings.CACHES | {alias: cache},
            **{"API_RATE": "3/m", "FEED_RATE": "2/m", "CORRECTION_RATE": "2/h"} | rates,
        ),
        mock.patch.object(ratelimit_core, "_get_window", window_at_start),
    ):
        yield


def local_cache() -> dict:
    return {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": uuid.uuid4().hex,
    }


def assert_rate_limited(response) -> None:
    assert response.status_code == 429
    retry_after = int(response["Retry-After"])
    assert 1 <= retry_after <= 60
    assert response.json() == {"error": "rate_limited", "retry_after": retry_after}


@pytest.mark.parametrize(
    "path",
    [
        "/api/instances",
        "/api/instances?gpu=h100-sxm",
        "/api/estimate?params_b=7&mode=train-ddp",
        "/api/openapi.json",
    ],
)
def test_the_api_answers_429_with_retry_after_past_its_limit(client, catalog, path):
    with limited_settings(local_cache()):
        statuses = [client.get(path).status_code for _ in range(3)]
        assert all(status < 500 and status != 429 for status in statuses), statuses
        assert_rate_limited(client.get(path))


def test_the_api_shares_one_count_per_client_across_its_endpoints(client, catalog):
    with limited_settings(local_cache()):
        client.get("/api/instances")
        client.get("/api/estimate?params_b=7&mode=train-ddp")
        client.get("/api/instances?page=1")
        assert_rate_limited(client.get("/api/openapi.json"))
        other = Client(REMOTE_ADDR="192.0.2.7")  # another client still gets answers
        assert other.get("/api/instances").status_code == 200


def test_the_feed_answers_429_past_its_own_limit(client, catalog):
    with limited_settings(local_cache()):
        assert [client.get("/feeds/price-changes/").status_code for _ in range(2)] == [200, 200]
        assert_rate_limited(client.get("/feeds/price-changes/"))
        assert client.get("/api/instances").status_code == 200  # a separate count


def test_renders_that_miss_the_cache_are_limited_per_client(client, catalog):
    """Pages, exports, estimates and plans cost a render each: RENDER_RATE counts those per
    client, while a page answered from the response cache costs nothing and is never limited."""
    with (
        limited_settings(local_cache(), RENDER_RATE="3/m", API_RATE="100/m"),
        override_settings(PAGE_CACHE_SECONDS=300),
    ):
        caches["default"].clear()
        for n in (1, 2, 3):
            assert client.get(f"/?gpu_count_min={n}").status_code == 200
        for path in ("/?gpu_count_min=4", "/estimate/?params_b=7", "/plan/?gpus=16"):
            page = client.get(path)
            assert page.status_code == 429, path
            assert 1 <= int(page["Retry-After"]) <= 60
        assert_rate_limited(client.get("/?gpu_count_min=5&format=json"))
        assert client.get("/?gpu_count_min=1").status_code == 200  # cached: no render
        assert Client(REMOTE_ADDR="192.0.2.7").get("/?gpu_count_min=4").status_code == 200
        chinese = client.get("/zh-hans/?gpu_count_min=6")
        assert chinese.status_code == 429
        assert "请求过多" in chinese.content.decode()


def test_page_traffic_never_evicts_a_clients_count(client, catalog):
    """The limiter counts in a cache alias of its own: 400 distinct pages fill the response
    cache (300 entries in local memory) and the sixth correction is still refused."""
    alias = settings.RATELIMIT_USE_CACHE
    assert alias != "default"
    assert settings.CACHES[alias] != settings.CACHES["default"]
    url = "/instances/aws/ib-8x/report/"
    form = {
        "topic": "fabric",
        "message": "It has eight 400G ports, per the provider.",
        "source_url": "https://docs.example.com/network",
    }
    caches[alias].clear()
    try:
        with override_settings(
            RATELIMIT_ENABLE=True,
            CORRECTION_RATE="5/h",
            API_RATE="1000/m",
            RENDER_RATE="1000/m",
            PAGE_CACHE_SECONDS=300,
        ):
            assert [client.post(url, form).status_code for _ in range(6)] == [302] * 5 + [429]
            for n in range(400):
                assert client.get(f"/api/instances?gpu_count_min={n}").status_code == 200
            assert client.post(url, form).status_code == 429
    finally:
        caches[alias].clear()
        caches["default"].clear()


def test_the_correction_form_answers_429_past_its_limit(client, catalog):
    url = "/instances/aws/ib-8x/report/"
    form = {
        "topic": "fabric",
        "message": "It has eight 400G ports, per the provider.",
        "source_url": "https://docs.example.com/network",
    }
    with limited_settings(local_cache()):
        assert [client.post(url, form).status_code for _ in range(3)] == [302, 302, 429]


def test_limits_are_off_in_the_test_settings(client, catalog):
    assert settings.RATELIMIT_ENABLE is False
    assert {client.get("/api/instances").status_code for _ in range(5)} == {200}


def test_an_unreachable_cache_lets_requests_through_rather_than_fail(client, catalog):
    dead = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:1/0",
    }
    with limited_settings(dead):
        assert client.get("/api/instances").status_code == 200
        assert client.get("/feeds/price-changes/").status_code == 200


def test_the_openapi_document_lists_the_429_of_every_operation():
    document = openapi.document("https://gpucatalog.example/")
    operations = [op for path in document["paths"].values() for op in path.values()]
    assert operations
    for operation in operations:
        answer = operation["responses"]["429"]
        assert "Retry-After" in answer["headers"]
        schema = answer["content"]["application/json"]["schema"]
        assert schema["properties"]["error"]["enum"] == ["rate_limited"]


# -- Redis: one count shared by every process ----------------------------------------------------


def redis_location() -> str:
    return os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"


@pytest.fixture
def redis_cache_config():
    redis = pytest.importorskip("redis")
    location = redis_location()
    try:
        redis.Redis.from_url(location, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        pytest.skip(f"no Redis answers at {urlsplit(location).netloc} ({exc}); CI has one")
    prefix = f"gpucatalog-test-{uuid.uuid4().hex}"
    yield {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": location,
        "KEY_PREFIX": prefix,
    }
    connection = redis.Redis.from_url(location)
    for key in connection.scan_iter(f"{prefix}:*"):
        connection.delete(key)


@pytest.mark.redis
def test_the_limit_holds_across_two_separate_redis_clients(client, catalog, redis_cache_config):
    """Two cache clients stand for two web processes: the count is the same in both."""
    first, second = "ratelimit-process-a", "ratelimit-process-b"
    shared = {first: redis_cache_config, second: dict(redis_cache_config)}
    with override_settings(RATELIMIT_ENABLE=True, API_RATE="3/m", CACHES=settings.CACHES | shared):
        assert caches[first] is not caches[second]
        with override_settings(RATELIMIT_USE_CACHE=first):
            assert [client.get("/api/instances").status_code for _ in range(3)] == [200] * 3
        with override_settings(RATELIMIT_USE_CACHE=second):
            assert_rate_limited(client.get("/api/instances"))
