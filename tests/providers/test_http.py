"""The client factory: User-Agent, timeouts, bounded retries with backoff that honour Retry-After."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from providers.http import (
    BACKOFF_CAP_S,
    MAX_ATTEMPTS,
    USER_AGENT,
    backoff_seconds,
    make_client,
    retry_after_seconds,
)


def scripted(*answers):
    """A MockTransport answering with the given statuses (or raising the given exceptions)."""
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        answer = answers[min(len(calls), len(answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        status, headers = answer if isinstance(answer, tuple) else (answer, {})
        return httpx.Response(status, headers=headers, json={"n": len(calls)})

    return httpx.MockTransport(handler), calls


def test_client_sends_its_user_agent_and_has_timeouts():
    transport, calls = scripted(200)
    with make_client(transport) as client:
        client.get("https://api.example/x")
        assert client.timeout.read == 60.0
        assert client.timeout.connect == 10.0
    assert calls[0].headers["User-Agent"] == USER_AGENT


def test_a_429_is_retried_after_the_delay_retry_after_asks_for(sleeps):
    transport, calls = scripted((429, {"Retry-After": "3"}), 200)
    with make_client(transport, sleep=sleeps) as client:
        response = client.get("https://api.example/x")
    assert response.status_code == 200
    assert len(calls) == 2
    assert sleeps == [3.0]


def test_retry_after_may_be_an_http_date():
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    response = httpx.Response(
        503, headers={"Retry-After": format_datetime(now + timedelta(seconds=7), usegmt=True)}
    )
    assert retry_after_seconds(response, now=now) == 7.0
    assert retry_after_seconds(httpx.Response(503, headers={"Retry-After": "soon"})) is None


def test_5xx_answers_are_retried_a_bounded_number_of_times_then_returned(sleeps):
    transport, calls = scripted(500)
    with make_client(transport, sleep=sleeps, rng=lambda: 1.0) as client:
        response = client.get("https://api.example/x")
    assert response.status_code == 500
    assert len(calls) == MAX_ATTEMPTS
    # Exponential backoff without Retry-After: 1, 2, 4 seconds at full jitter.
    assert sleeps == [1.0, 2.0, 4.0]


def test_backoff_is_jittered_and_capped():
    assert backoff_seconds(1, rng=lambda: 0.25) == 0.25
    assert backoff_seconds(30, rng=lambda: 1.0) == BACKOFF_CAP_S


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_other_4xx_answers_are_not_retried(status, sleeps):
    transport, calls = scripted(status)
    with make_client(transport, sleep=sleeps) as client:
        response = client.get("https://api.example/x")
    assert response.status_code == status
    assert len(calls) == 1
    assert sleeps == []


def test_timeouts_are_retried_and_the_last_one_is_raised(sleeps):
    transport, calls = scripted(httpx.ReadTimeout("slow"))
    with make_client(transport, sleep=sleeps) as client, pytest.raises(httpx.ReadTimeout):
        client.get("https://api.example/x")
    assert len(calls) == MAX_ATTEMPTS
    assert len(sleeps) == MAX_ATTEMPTS - 1


def test_a_timeout_then_success_returns_the_success(sleeps):
    transport, calls = scripted(httpx.ConnectError("refused"), 200)
    with make_client(transport, sleep=sleeps) as client:
        assert client.get("https://api.example/x").status_code == 200
    assert len(calls) == 2
