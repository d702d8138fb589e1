"""Rate limits on the JSON API and the feeds: one chokepoint in front of every view under them.

Counted per client IP (REMOTE_ADDR; IPv6 per /64) by django-ratelimit in the cache: Redis when
REDIS_URL is set, so every process shares the count; local memory otherwise. Over the limit
the answer is 429 with Retry-After and the API's JSON error shape, never a 500: a cache that
cannot be reached lets the request through and logs why.

In front of every path, a query string with more fields than Django parses answers 400
before anything reads request.GET (TooManyFieldsMiddleware).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import TooManyFieldsSent
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import get_resolver, get_urlconf
from django_ratelimit.core import get_usage

logger = logging.getLogger(__name__)

# (path prefix, the setting holding its rate, the counter's group)
RATED_PATHS = (
    ("/api/", "API_RATE", "gpucatalog:api"),
    ("/feeds/", "FEED_RATE", "gpucatalog:feeds"),
)


def retry_after(request: HttpRequest, group: str, rate: str, what: str) -> int | None:
    """Count this request against `rate` for its client in `group`: the seconds to wait when
    it is over, else None. A cache that cannot be reached lets the request through and logs
    `what` was not counted."""
    try:
        usage = get_usage(request, group=group, key="ip", rate=rate, increment=True)
    except Exception:  # the limiter's cache is away: serve rather than fail
        logger.warning("%s not counted", what, exc_info=True)
        return None
    if usage is None or not usage["should_limit"]:
        return None
    return max(1, usage["time_left"])


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
                wait = retry_after(request, group, rate, f"rate limit for {prefix}")
                if wait is not None:
                    return rate_limited(wait)
                break
        return self.get_response(request)


class TooManyFieldsMiddleware:
    """A query string with more fields than DATA_UPLOAD_MAX_NUMBER_FIELDS: 400 before anything
    reads request.GET, whose parse would raise TooManyFieldsSent. Django turns that into its HTML
    400 in production (on the API too), and with DEBUG its technical page reads request.GET again,
    fails again and ends in a 500 after seconds of work. The count is the one Django's parse makes
    (one more than the `&`s of a non-empty query string; `;` separates nothing), taken on the raw
    string: no parsing, no database. The API and the feeds answer in their JSON error shape, the
    pages with the site's 400 page (the URLconf's handler400)."""

    JSON_PREFIXES = ("/api/", "/feeds/")
    FIELD = "query_string"  # the name the JSON error gives: no one parameter is at fault

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        query = request.META.get("QUERY_STRING", "")
        if limit is not None and query:
            fields = query.count("&") + 1
            if fields > limit:
                return self.too_many_fields(request, fields, limit)
        return self.get_response(request)

    def too_many_fields(self, request: HttpRequest, fields: int, limit: int) -> HttpResponse:
        message = f"Too many parameters: {fields:,} given, at most {limit:,} are accepted."
        # Logged where Django logs the exception this stands in for.
        logging.getLogger("django.security.TooManyFieldsSent").error(
            message, extra={"status_code": 400, "request": request}
        )
        if request.path_info.startswith(self.JSON_PREFIXES):
            return JsonResponse(
                {"error": "invalid_parameters", "fields": {self.FIELD: [message]}}, status=400
            )
        handler = get_resolver(get_urlconf()).resolve_error_handler(400)
        return handler(request, TooManyFieldsSent(message))
