"""Settings come from the environment, parsed strictly, with errors that name the variable."""

import os
import subprocess
import sys
from decimal import Decimal

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from gpucatalog.settings import (
    database_from_env,
    env_bool,
    env_choice,
    env_decimal,
    env_int,
    env_list,
    env_str,
    env_url,
)

PRODUCTION_ENV = {
    "DJANGO_ENV": "production",
    "DEBUG": "false",
    "SECRET_KEY": "x7Gq2vL9pR4tW8zB1nM6cK3hJ5dF0sA-yU2iO7eQ9wT4rE1uY6oP3aS8dG5fH2jK",
    "ALLOWED_HOSTS": "gpucatalog.example",
}


@pytest.mark.parametrize(
    ("parser", "value", "message"),
    [
        (env_bool, "maybe", "FLAG must be one of true/false"),
        (env_int, "12a", "FLAG must be a whole number"),
        (env_decimal, "abc", "FLAG must be a decimal number"),
        (env_decimal, "NaN", "FLAG must be a finite number"),
        (env_list, "a,,b", "FLAG must be a comma-separated list"),
    ],
)
def test_a_bad_value_is_refused_with_the_variable_named(parser, value, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        parser("FLAG", environ={"FLAG": value})


def test_values_parse_and_an_empty_value_falls_back_to_the_default():
    assert env_bool("F", environ={"F": "Yes"}) is True
    assert env_bool("F", environ={"F": "off"}) is False
    assert env_bool("F", False, environ={"F": ""}) is False
    assert env_int("F", environ={"F": " 42 "}) == 42
    assert env_decimal("F", environ={"F": "0.75"}) == Decimal("0.75")
    assert env_list("F", environ={"F": "a.example, b.example"}) == ["a.example", "b.example"]


def test_a_missing_required_variable_is_named():
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY is required"):
        env_str("SECRET_KEY", environ={})


def test_range_and_choice_limits_are_enforced():
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env_int("HOURS", minimum=1, environ={"HOURS": "0"})
    with pytest.raises(ImproperlyConfigured, match="at most 1"):
        env_decimal("RATIO", maximum=1, environ={"RATIO": "1.5"})
    with pytest.raises(ImproperlyConfigured, match="DJANGO_ENV must be one of"):
        env_choice("DJANGO_ENV", ("development", "production"), environ={"DJANGO_ENV": "prod"})


def test_urls_must_have_the_expected_scheme_and_a_host():
    with pytest.raises(ImproperlyConfigured, match="REDIS_URL must be a URL with scheme redis"):
        env_url("REDIS_URL", ("redis",), environ={"REDIS_URL": "http://localhost:6379"})
    assert env_url("REDIS_URL", ("redis",), environ={"REDIS_URL": "redis://127.0.0.1:6379/0"})


def test_sqlite_is_refused_as_a_database():
    with pytest.raises(ImproperlyConfigured, match="must be a PostgreSQL URL"):
        database_from_env({"DATABASE_URL": "sqlite:///db.sqlite3"})
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL is required"):
        database_from_env({})


def test_a_postgres_url_becomes_the_postgresql_backend():
    config = database_from_env({"DATABASE_URL": "postgres://u:p@db.example:6543/catalog"})
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["HOST"], config["PORT"], config["NAME"]) == ("db.example", 6543, "catalog")


def test_the_suite_runs_on_postgresql():
    assert settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


def run_manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    # A clean environment: none of the test run's own switches (the browser tests set
    # DJANGO_ALLOW_ASYNC_UNSAFE, which `check --deploy` rightly refuses).
    dropped = {"DJANGO_ENV", "DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    base = {k: v for k, v in os.environ.items() if k not in dropped}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env=base | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_start_up_fails_loudly_on_a_bad_variable():
    result = run_manage("check", env={"PRICE_STALE_AFTER_HOURS": "soon"})
    assert result.returncode != 0
    assert "PRICE_STALE_AFTER_HOURS must be a whole number" in result.stderr


def test_production_refuses_to_start_without_a_secret_key():
    env = PRODUCTION_ENV | {"SECRET_KEY": ""}
    result = run_manage("check", env=env)
    assert result.returncode != 0
    assert "SECRET_KEY is required" in result.stderr


def test_production_settings_pass_the_deployment_check():
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
