"""The mail and refresh settings parse strictly and refuse what does not belong in production."""

from __future__ import annotations

import re

import pytest
from django.conf import settings

from tests.test_settings import PRODUCTION_ENV, run_manage


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CURATOR_EMAILS": "prices@example.com,not-an-address"}, "is not an email address"),
        ({"REFRESH_INTERVALS": "aws=soon"}, "REFRESH_INTERVALS must look like aws=360"),
        ({"REFRESH_INTERVALS": "nosuchcloud=60"}, "REFRESH_INTERVALS names 'nosuchcloud'"),
        ({"REFRESH_HARD_TIME_LIMIT_SECONDS": "600"}, "timeout chain broken"),
        ({"DJANGO_ENV": "development", "REFRESH_TEST_PAUSE_FILE": "/tmp/x"}, "only with"),
    ],
)
def test_start_up_refuses_bad_refresh_settings(env, message):
    result = run_manage("check", env=env)

    assert result.returncode != 0
    assert message in result.stderr


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CURATOR_EMAILS": "prices@example.com"}, "CURATOR_EMAILS is set but no mail server"),
        ({"REFRESH_REPLAY_DIR": "/tmp/replay"}, "REFRESH_REPLAY_DIR is for tests and demos"),
    ],
)
def test_production_refuses_alerts_without_mail_and_replayed_prices(env, message):
    result = run_manage("check", env=PRODUCTION_ENV | env)

    assert result.returncode != 0
    assert message in result.stderr


def test_production_with_a_mail_server_passes_the_deployment_check():
    env = PRODUCTION_ENV | {
        "CURATOR_EMAILS": "prices@example.com",
        "EMAIL_URL": "smtp+tls://alerts:pw@mail.example:587",
    }

    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env=env)

    assert result.returncode == 0, result.stdout + result.stderr


def test_every_variable_the_settings_read_is_listed_in_env_example():
    source = "".join(
        (settings.BASE_DIR / "gpucatalog" / name).read_text(encoding="utf-8")
        for name in ("settings.py", "env.py")
    )
    read = set(re.findall(r'env_[a-z_]+\(\s*"([A-Z0-9_]+)"', source))
    read |= set(re.findall(r'_raw\("([A-Z0-9_]+)"', source))
    example = (settings.BASE_DIR / ".env.example").read_text(encoding="utf-8")
    listed = set(re.findall(r"^([A-Z0-9_]+)=", example, re.MULTILINE))

    assert read - listed == set(), "add these to .env.example"
