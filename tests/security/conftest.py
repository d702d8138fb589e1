"""Fixtures for the security tests: a small catalog with one row of every admin model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, date, datetime

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import caches

from offerings.models import (
    CorrectionReport,
    ExchangeRate,
    PriceObservation,
    ScrapeRun,
    SkuReview,
)

PRODUCTION_ENV = {
    "DJANGO_ENV": "production",
    "DEBUG": "false",
    "SECRET_KEY": "x7Gq2vL9pR4tW8zB1nM6cK3hJ5dF0sA-yU2iO7eQ9wT4rE1uY6oP3aS8dG5fH2jK",
    "ALLOWED_HOSTS": "testserver",
}

# The settings that decide the security headers and cookie flags.
SECURITY_SETTINGS = (
    "SECURE_CONTENT_TYPE_NOSNIFF",
    "SECURE_CROSS_ORIGIN_OPENER_POLICY",
    "SECURE_CSP",
    "SECURE_CSP_REPORT_ONLY",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SECURE_HSTS_SECONDS",
    "SECURE_PROXY_SSL_HEADER",
    "SECURE_REFERRER_POLICY",
    "SECURE_SSL_REDIRECT",
    "SESSION_COOKIE_SECURE",
    "SESSION_COOKIE_HTTPONLY",
    "SESSION_COOKIE_SAMESITE",
    "CSRF_COOKIE_SECURE",
    "CSRF_COOKIE_HTTPONLY",
    "CSRF_COOKIE_SAMESITE",
    "X_FRAME_OPTIONS",
)

DUMP = f"""
import json
from gpucatalog import settings
print(json.dumps({{name: getattr(settings, name, None) for name in {SECURITY_SETTINGS!r}}}))
"""


@pytest.fixture(scope="session")
def production_security_settings() -> dict:
    """The security settings exactly as `DJANGO_ENV=production` computes them."""
    base = {k: v for k, v in os.environ.items() if k not in {"DJANGO_ENV", "DEBUG", "SECRET_KEY"}}
    result = subprocess.run(
        [sys.executable, "-c", DUMP],
        cwd=settings.BASE_DIR,
        env=base | PRODUCTION_ENV,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    values = json.loads(result.stdout.strip().splitlines()[-1])
    if isinstance(values["SECURE_PROXY_SSL_HEADER"], list):
        values["SECURE_PROXY_SSL_HEADER"] = tuple(values["SECURE_PROXY_SSL_HEADER"])
    return {name: value for name, value in values.items() if value is not None}


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Login tests make many attempts; the production hasher's cost is not under test here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def curator(db):
    return get_user_model().objects.create_superuser(
        "curator", "curator@example.com", "a-long-curator-passphrase"
    )


@pytest.fixture
def site(catalog, curator) -> dict:
    """The shared `catalog` plus one row of each model the admin lists."""
    ib = catalog["ib"]
    offer = ib.offers.first()
    PriceObservation.objects.create(
        offer=offer,
        price_per_hour=offer.price_per_hour,
        currency=offer.currency,
        observed_at=datetime(2026, 11, 1, tzinfo=UTC),
    )
    ExchangeRate.objects.create(
        currency="CNY",
        rate_date=date(2026, 10, 1),
        usd_per_unit="0.14",
        source_url="https://www.ecb.europa.eu/",
    )
    ScrapeRun.objects.create(provider=ib.provider, status=ScrapeRun.Status.SUCCEEDED)
    SkuReview.objects.create(provider=ib.provider, sku="p9.mystery", parsed={"gpu": None})
    CorrectionReport.objects.create(
        instance=ib,
        topic="fabric",
        message="The fabric is RoCE, not InfiniBand.",
        source_url="https://docs.example.com/fabric",
    )
    return catalog


@pytest.fixture
def clean_caches():
    """Counters in the cache (rate limits, lockouts) must not leak between tests."""

    def clear() -> None:
        for alias in settings.CACHES:
            backend = caches[alias]
            if "LocMem" in type(backend).__name__:
                backend.clear()

    clear()
    yield
    clear()


# -- Chromium ------------------------------------------------------------------------------------

# `browser`, the session's Chromium, comes from tests/conftest.py.

CSP_INIT_SCRIPT = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.violatedDirective} ${event.blockedURI} ${event.sourceFile}:${event.lineNumber}`);
});
"""


@pytest.fixture
def watched_page(browser, live_server):
    """A page that records console messages, CSP violations and dialogs."""
    context = browser.new_context(base_url=live_server.url)
    context.add_init_script(CSP_INIT_SCRIPT)
    page = context.new_page()
    page.console_messages = []
    page.dialogs = []
    page.on("console", lambda m: page.console_messages.append(f"{m.type}: {m.text}"))

    def on_dialog(dialog) -> None:
        page.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    yield page
    context.close()


def csp_violations(page) -> list[str]:
    """Violations the page reported through events and the console."""
    events = page.evaluate("window.__cspViolations || []")
    console = [m for m in page.console_messages if "Content Security Policy" in m]
    return events + console
