"""Rate limits on the JSON API and the feeds: one chokepoint in front of every view under them.

Counted per client IP (REMOTE_ADDR; IPv6 per /64) by django-ratelimit in the cache: Redis when
REDIS_URL is set, so every process shares the count; local memory otherwise. Over the limit
the answer is 429 with Retry-After and the API's JSON error shape, never a 500: a cache that
cannot be reached lets the request through and logs why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django_ratelimit.core import get_usage

logger = logging.getLogger(__name__)

# (path prefix, the setting holding its rate, the counter's group)
RATED_PATHS = (
    ("/api/", "API_RATE", "gpucatalog:api"),
    ("/feeds/", "FEED_RATE", "gpucatalog:feeds"),
)


def rate_limited(retry_after: int) -> JsonResponse:
    response = JsonResponse(
        {"error": "rate_limited", "retry_after": retry_after},
        status=429,
    )
    response["Retry-After"] = str(retry_after)
    return response


class RateLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        for prefix, setting, group in RATED_PATHS:
            if request.path_info.startswith(prefix):
                rate = getattr(settings, setting)
                try:
                    usage = get_usage(request, group=group, key="ip", rate=rate, increment=True)
                except Exception:  # the cache is down: serve rather than fail
                    logger.warning("rate limit not counted for %s", prefix, exc_info=True)
                    usage = None
                if usage is not None and usage["should_limit"]:
                    return rate_limited(max(1, usage["time_left"]))
                break
        return self.get_response(request)
