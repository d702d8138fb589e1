"""Curator alerts: failing and stale providers are flagged and emailed once, in plain text."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.core import mail
from django.core.mail.backends.base import BaseEmailBackend
from django.utils import timezone

from offerings.models import Provider, RefreshHealth, ScrapeRun
from providers.alerts import check_providers, plain
from providers.tasks import check_freshness

CURATORS = ["prices@example.com", "oncall@example.com"]
THRESHOLD = {"aws": timedelta(hours=12)}


class RefusingBackend(BaseEmailBackend):
    """A mail server that is down."""

    def send_messages(self, email_messages):
        raise ConnectionRefusedError("connection refused by smtp.example.com:587")


@pytest.fixture
def aws(db, settings) -> Provider:
    settings.CURATOR_EMAILS = CURATORS
    return Provider.objects.create(
        slug="aws", name="Amazon Web Services", website="https://aws.example", kind="hyperscaler"
    )


def finished_run(provider, status, hours_ago=0.0, message=None, **extra) -> ScrapeRun:
    at = timezone.now() - timedelta(hours=hours_ago)
    return ScrapeRun.objects.create(
        provider=provider,
        status=status,
        started_at=at,
        finished_at=at,
        error_messages=[message] if message else [],
        **extra,
    )


def state(provider) -> str:
    return RefreshHealth.objects.get(provider=provider).state


def test_a_failed_run_is_flagged_and_emailed_to_the_curators_once(aws):
    finished_run(aws, "succeeded", hours_ago=3)
    failed = finished_run(aws, "failed", hours_ago=1, message="HTTP 503 from pricing.example")

    check_providers(THRESHOLD)
    check_providers(THRESHOLD)

    assert state(aws) == "failing"
    [email] = mail.outbox
    assert email.to == CURATORS
    assert email.subject == "[gpucatalog] refresh needs attention: aws"
    assert f"run #{failed.pk} failed" in email.body
    assert "HTTP 503 from pricing.example" in email.body
    assert f"/admin/offerings/scraperun/{failed.pk}/change/" in email.body


def test_a_provider_that_keeps_failing_is_not_emailed_again(aws):
    finished_run(aws, "failed", hours_ago=2, message="timed out")
    check_providers(THRESHOLD)
    finished_run(aws, "rejected", hours_ago=1, message="row-count guard: 3 rows")

    check_providers(THRESHOLD)

    assert len(mail.outbox) == 1
    assert "row-count guard" in RefreshHealth.objects.get(provider=aws).detail


def test_a_provider_that_recovers_and_breaks_again_is_emailed_again(aws):
    finished_run(aws, "failed", hours_ago=3, message="first problem")
    check_providers(THRESHOLD)
    finished_run(aws, "succeeded", hours_ago=2)
    check_providers(THRESHOLD)
    assert state(aws) == "ok"
    assert RefreshHealth.objects.get(provider=aws).alerted_key == ""

    finished_run(aws, "failed", hours_ago=1, message="second problem")
    check_providers(THRESHOLD)

    assert [("first problem" in m.body, "second problem" in m.body) for m in mail.outbox] == [
        (True, False),
        (False, True),
    ]


def test_a_provider_without_a_good_run_within_its_threshold_is_stale(aws):
    good = finished_run(aws, "succeeded", hours_ago=30)

    check_providers(THRESHOLD)
    check_providers(THRESHOLD)

    health = RefreshHealth.objects.get(provider=aws)
    assert (health.state, health.alerted_key) == ("stale", f"stale:{good.pk}")
    assert health.detail == f"last good run #{good.pk} 30.0 h ago, stale after 12.0 h"
    [email] = mail.outbox
    assert "aws (Amazon Web Services): stale" in email.body


def test_a_fresh_provider_is_ok_and_nobody_is_emailed(aws):
    finished_run(aws, "succeeded", hours_ago=11)

    check_providers(THRESHOLD)

    assert state(aws) == "ok"
    assert mail.outbox == []


def test_a_new_provider_waits_for_its_first_run_then_is_stale_without_one(aws):
    check_providers(THRESHOLD)
    assert state(aws) == "pending"

    check_providers(THRESHOLD, now=timezone.now() + timedelta(hours=13))

    assert state(aws) == "stale"
    [email] = mail.outbox
    assert "no good run yet" in email.body


def test_a_provider_that_was_only_ever_skipped_is_not_configured_not_alerted(aws):
    finished_run(aws, "skipped", hours_ago=40, message="LAMBDA_API_KEY is not set: skipped")

    check_providers(THRESHOLD)

    assert state(aws) == "skipped"
    assert mail.outbox == []


def test_a_failed_run_whose_task_retries_is_not_final(aws):
    finished_run(aws, "succeeded", hours_ago=2)
    finished_run(aws, "failed", hours_ago=1, message="ConnectError", retry_scheduled=True)

    check_providers(THRESHOLD)

    assert state(aws) == "ok"
    assert mail.outbox == []


def test_scraped_strings_reach_the_email_as_one_line_of_plain_text(aws):
    hostile = '<script>alert(1)</script>\r\nBcc: victim@evil.example\x07\u2028"quoted"'
    finished_run(aws, "failed", message=hostile)

    check_providers(THRESHOLD)

    [email] = mail.outbox
    assert email.content_subtype == "plain"
    assert getattr(email, "alternatives", []) == []
    assert email.subject == "[gpucatalog] refresh needs attention: aws"
    assert '<script>alert(1)</script> Bcc: victim@evil.example "quoted"' in email.body
    assert "\r" not in email.body
    assert "\x07" not in email.body
    assert email.bcc == []


def test_plain_text_is_bounded():
    assert plain("x" * 2000) == "x" * 499 + "…"


def test_when_mail_cannot_be_sent_the_next_check_tries_again(aws, settings, caplog):
    finished_run(aws, "failed", message="HTTP 500")
    settings.MAILERS = {"default": {"BACKEND": "tests.tasks.test_alerts.RefusingBackend"}}

    with caplog.at_level(logging.ERROR, logger="providers.alerts"):
        check_providers(THRESHOLD)

    assert "could not email the curators" in caplog.text
    health = RefreshHealth.objects.get(provider=aws)
    assert (health.state, health.alerted_key) == ("failing", "")

    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    check_providers(THRESHOLD)

    assert len(mail.outbox) == 1


def test_without_curator_addresses_the_alert_is_logged(aws, settings, caplog):
    settings.CURATOR_EMAILS = []
    finished_run(aws, "failed", message="HTTP 500")

    with caplog.at_level(logging.WARNING, logger="providers.alerts"):
        check_providers(THRESHOLD)

    assert "aws needs attention: failing" in caplog.text
    assert "CURATOR_EMAILS is empty" in caplog.text
    assert mail.outbox == []


def test_the_scheduled_check_uses_each_providers_interval(aws, settings):
    settings.REFRESH_INTERVALS = {"aws": 60}  # stale after 2 h
    finished_run(aws, "succeeded", hours_ago=3)

    states = check_freshness.apply().get()

    assert states["aws"] == "stale"
    assert RefreshHealth.objects.get(provider=aws).stale_after == timedelta(hours=2)
    assert len(mail.outbox) == 1
