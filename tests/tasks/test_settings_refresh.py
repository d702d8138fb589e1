"""The mail and refresh settings parse strictly and refuse what does not belong in production."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from gpucatalog.settings import mailers_from_env
from tests.test_settings import PRODUCTION_ENV, run_manage

SMTP = "django.core.mail.backends.smtp.EmailBackend"


def test_without_a_mail_server_development_prints_mail_and_production_uses_localhost():
    assert mailers_from_env({}) == {
        "default": {"BACKEND": "django.core.mail.backends.console.EmailBackend"}
    }
    production = mailers_from_env({}, production=True)["default"]
    assert production["BACKEND"] == SMTP
    assert (production["OPTIONS"]["host"], production["OPTIONS"]["port"]) == ("localhost", 25)


def test_an_email_url_sets_host_port_credentials_and_tls():
    config = mailers_from_env(
        {"EMAIL_URL": "smtp+tls://alerts%40example.com:p%2Fw@mail.example:2525"}
    )

    assert config["default"]["BACKEND"] == SMTP
    assert config["default"]["OPTIONS"] == {
        "host": "mail.example",
        "port": 2525,
        "username": "alerts@example.com",
        "password": "p/w",
        "use_tls": True,
        "use_ssl": False,
        "timeout": 10,
    }


def test_smtps_means_implicit_tls_on_465():
    options = mailers_from_env({"EMAIL_URL": "smtps://mail.example"})["default"]["OPTIONS"]

    assert (options["port"], options["use_ssl"], options["use_tls"]) == (465, True, False)


def test_separate_email_variables_work_too():
    options = mailers_from_env(
        {
            "EMAIL_HOST": "mail.example",
            "EMAIL_USE_TLS": "true",
            "EMAIL_HOST_USER": "alerts",
            "EMAIL_HOST_PASSWORD": "secret",
            "EMAIL_TIMEOUT_SECONDS": "5",
        }
    )["default"]["OPTIONS"]

    assert options == {
        "host": "mail.example",
        "port": 587,
        "username": "alerts",
        "password": "secret",
        "use_tls": True,
        "use_ssl": False,
        "timeout": 5,
    }


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"EMAIL_URL": "http://mail.example"}, "EMAIL_URL must look like smtp"),
        ({"EMAIL_URL": "smtp://"}, "EMAIL_URL must look like smtp"),
        ({"EMAIL_URL": "smtp://mail.example:port"}, "EMAIL_URL has an invalid port"),
        ({"EMAIL_URL": "smtp://a.example", "EMAIL_HOST": "b.example"}, "not both"),
        ({"EMAIL_HOST": "m.example", "EMAIL_USE_TLS": "1", "EMAIL_USE_SSL": "1"}, "both be true"),
        ({"EMAIL_HOST": "m.example", "EMAIL_PORT": "0"}, "EMAIL_PORT must be at least 1"),
        ({"EMAIL_TIMEOUT_SECONDS": "soon"}, "EMAIL_TIMEOUT_SECONDS must be a whole number"),
    ],
)
def test_bad_mail_settings_are_refused_with_the_variable_named(environ, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        mailers_from_env(environ)


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
    source = (settings.BASE_DIR / "gpucatalog" / "settings.py").read_text(encoding="utf-8")
    read = set(re.findall(r'env_[a-z_]+\(\s*"([A-Z0-9_]+)"', source))
    read |= set(re.findall(r'_raw\("([A-Z0-9_]+)"', source))
    example = (settings.BASE_DIR / ".env.example").read_text(encoding="utf-8")
    listed = set(re.findall(r"^([A-Z0-9_]+)=", example, re.MULTILINE))

    assert read - listed == set(), "add these to .env.example"
