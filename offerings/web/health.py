"""`/healthz` for load balancers and monitors: does the database answer, does the broker answer.

The broker check (a Redis PING) waits at most BROKER_PING_TIMEOUT_SECONDS for the connection
and for the answer; the database check is one `SELECT 1` on the request's usual connection. A dependency that is configured
and down makes the answer 503, so a load balancer takes the process out of rotation; a broker
that is not configured (no CELERY_BROKER_URL: `make run`) is reported as such and is not an
error. Errors name the exception class only: the endpoint is public. Never cached, never
rate-limited (the rate limits cover /api/ and /feeds/ only).
"""

from __future__ import annotations

import logging

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

logger = logging.getLogger(__name__)

BROKER_PING_TIMEOUT_SECONDS = 1.0


def check_database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # any failure means unhealthy
        logger.warning("healthz: the database does not answer: %s", exc)
        return f"error: {type(exc).__name__}"
    return "ok"


def check_broker(url: str | None) -> str:
    if not url:
        return "not configured"
    client = redis.Redis.from_url(
        url,
        socket_timeout=BROKER_PING_TIMEOUT_SECONDS,
        socket_connect_timeout=BROKER_PING_TIMEOUT_SECONDS,
        retry_on_timeout=False,
    )
    try:
        client.ping()
    except Exception as exc:  # refused, timed out, auth: all mean no task can be sent
        logger.warning("healthz: the broker does not answer: %s", exc)
        return f"error: {type(exc).__name__}"
    finally:
        client.close()
    return "ok"


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Check the database and the broker; 503 when a configured one does not answer."""
    checks = {
        "database": check_database(),
        "broker": check_broker(settings.CELERY_BROKER_URL),
    }
    healthy = not any(value.startswith("error") for value in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "error", "checks": checks},
        status=200 if healthy else 503,
    )
