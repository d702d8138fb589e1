"""The one place an `httpx.Client` is made: timeouts, User-Agent, connection limits, retries.

Retries live in a transport wrapper so that every client gets them, including the ones tests
build around `httpx.MockTransport` or the replay transport: 429 and 5xx answers and timeouts or
connection failures are retried a bounded number of times with exponential backoff and full
jitter, honouring `Retry-After`; any other 4xx is final. Sleeping goes through an injectable
function so tests never wait.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

logger = logging.getLogger(__name__)

USER_AGENT = "gpucatalog/0.1 (+https://github.com/gpucatalog; price refresh)"
TIMEOUT = httpx.Timeout(connect=10.0, read=60.0, write=30.0, pool=10.0)
LIMITS = httpx.Limits(max_connections=8, max_keepalive_connections=4, keepalive_expiry=30.0)
MAX_ATTEMPTS = 4
BACKOFF_BASE_S = 1.0
BACKOFF_CAP_S = 30.0
RETRY_AFTER_CAP_S = 120.0
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

Sleep = Callable[[float], None]


def retry_after_seconds(response: httpx.Response, now: datetime | None = None) -> float | None:
    """Read `Retry-After` as seconds (delta or HTTP date); None when absent or unreadable."""
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return None
    if value.isascii() and value.isdigit():  # "²".isdigit() is true, float("²") fails
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff_seconds(attempt: int, rng: Callable[[], float] = random.random) -> float:
    """Full-jitter exponential backoff for the given 1-based attempt that just failed."""
    ceiling = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1))
    return ceiling * rng()


class RetryTransport(httpx.BaseTransport):
    """Retry 429/5xx answers, timeouts and connection failures; never other 4xx."""

    def __init__(
        self,
        inner: httpx.BaseTransport,
        *,
        max_attempts: int = MAX_ATTEMPTS,
        sleep: Sleep = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.inner = inner
        self.max_attempts = max_attempts
        self.sleep = sleep
        self.rng = rng

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        attempt = 1
        while True:
            try:
                response = self.inner.handle_request(request)
            except (httpx.TimeoutException, httpx.NetworkError) as exc:
                if attempt >= self.max_attempts:
                    raise
                delay = backoff_seconds(attempt, self.rng)
                logger.warning(
                    "%s %s: %r, retry %d in %.1fs", request.method, request.url, exc, attempt, delay
                )
            else:
                if response.status_code not in RETRY_STATUSES or attempt >= self.max_attempts:
                    return response
                wait = retry_after_seconds(response)
                delay = (
                    min(wait, RETRY_AFTER_CAP_S)
                    if wait is not None
                    else backoff_seconds(attempt, self.rng)
                )
                response.close()
                logger.warning(
                    "%s %s: HTTP %d, retry %d in %.1fs",
                    request.method,
                    request.url,
                    response.status_code,
                    attempt,
                    delay,
                )
            self.sleep(delay)
            attempt += 1

    def close(self) -> None:
        self.inner.close()


class LiveTransport(httpx.BaseTransport):
    """HTTP/1.1 for every request except gRPC ones (`application/grpc`), which need HTTP/2.

    The HTTP/2 pool is opened on the first gRPC request, so the scrapers that never speak gRPC
    (and their multi-GB downloads) keep plain HTTP/1.1.
    """

    def __init__(self) -> None:
        self.http1 = httpx.HTTPTransport(limits=LIMITS, retries=0)
        self.http2: httpx.HTTPTransport | None = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not request.headers.get("Content-Type", "").startswith("application/grpc"):
            return self.http1.handle_request(request)
        if self.http2 is None:
            self.http2 = httpx.HTTPTransport(limits=LIMITS, retries=0, http1=False, http2=True)
        return self.http2.handle_request(request)

    def close(self) -> None:
        self.http1.close()
        if self.http2 is not None:
            self.http2.close()


def live_transport() -> httpx.BaseTransport:
    """The network transport: pooled connections within LIMITS; retries are RetryTransport's."""
    return LiveTransport()


def no_sleep(seconds: float) -> None:
    """A `sleep` for replays and tests: recorded Retry-After and backoff delays are not waited out."""


def make_client(
    transport: httpx.BaseTransport | None = None,
    *,
    headers: dict[str, str] | None = None,
    sleep: Sleep | None = None,
    max_attempts: int = MAX_ATTEMPTS,
    rng: Callable[[], float] = random.random,
    timeout: httpx.Timeout = TIMEOUT,
) -> httpx.Client:
    """Build the client every scraper uses; pass `transport` to serve recorded responses."""
    inner = transport or live_transport()
    return httpx.Client(
        transport=RetryTransport(
            inner, max_attempts=max_attempts, sleep=time.sleep if sleep is None else sleep, rng=rng
        ),
        headers={"User-Agent": USER_AGENT, "Accept": "application/json", **(headers or {})},
        timeout=timeout,
        follow_redirects=True,
    )
