"""The admin login locks a client out after AXES_FAILURE_LIMIT failures (django-axes)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from axes.handlers.proxy import AxesProxyHandler
from django.conf import settings
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-curator-passphrase"
HANDLERS = {
    "database": "axes.handlers.database.AxesDatabaseHandler",
    "cache": "axes.handlers.cache.AxesCacheHandler",
}


@pytest.fixture(params=sorted(HANDLERS))
def axes(request, curator, clean_caches):
    """Axes on, with either handler: the database one (no Redis) or the cache one (Redis)."""
    with override_settings(
        AXES_ENABLED=True,
        AXES_HANDLER=HANDLERS[request.param],
        AXES_FAILURE_LIMIT=5,
        AXES_CACHE="default",
    ):
        AxesProxyHandler.get_implementation(force=True)
        AxesProxyHandler.reset_attempts(ip_address="127.0.0.1")
        yield request.param
        AxesProxyHandler.reset_attempts(ip_address="127.0.0.1")
    AxesProxyHandler.get_implementation(force=True)


def attempt(password: str) -> int:
    """One login through the admin form from a fresh browser; the HTTP status."""
    response = Client().post(
        "/admin/login/?next=/admin/", {"username": "curator", "password": password}
    )
    return response.status_code


def test_the_settings_turn_axes_on_with_a_limit_and_a_cool_off():
    assert settings.AXES_ENABLED is True
    assert settings.AXES_FAILURE_LIMIT >= 1
    assert timedelta(0) < settings.AXES_COOLOFF_TIME
    assert "axes.middleware.AxesMiddleware" in settings.MIDDLEWARE
    assert settings.AUTHENTICATION_BACKENDS[0] == "axes.backends.AxesStandaloneBackend"
    handler = settings.AXES_HANDLER
    assert handler == (HANDLERS["cache"] if settings.REDIS_URL else HANDLERS["database"])


def test_a_good_login_works_before_the_limit_and_the_sixth_attempt_is_locked_out(axes):
    assert [attempt("wrong") for _ in range(4)] == [200] * 4  # the form again, with its error
    assert attempt(PASSWORD) == 302  # four failures: the curator still gets in
    assert attempt("wrong") in (200, 429)  # the fifth failure reaches the limit
    assert attempt(PASSWORD) == 429  # the sixth attempt is refused, right password or not
    assert attempt("wrong") == 429


def test_a_locked_out_client_gets_no_session(axes):
    for _ in range(5):
        attempt("wrong")
    client = Client()
    response = client.post("/admin/login/", {"username": "curator", "password": PASSWORD})
    assert response.status_code == 429
    assert "sessionid" not in response.cookies
    assert client.get("/admin/").status_code == 302  # still sent to the login page


def test_the_lockout_ends_after_the_cool_off(axes):
    with override_settings(AXES_COOLOFF_TIME=timedelta(seconds=2)):
        for _ in range(5):
            attempt("wrong")
        assert attempt(PASSWORD) == 429
        time.sleep(2.5)
        assert attempt(PASSWORD) == 302
