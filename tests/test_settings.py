"""The settings start in each environment, or refuse to with the variable named."""

import os
import subprocess
import sys

from django.conf import settings

PRODUCTION_ENV = {
    "DJANGO_ENV": "production",
    "DEBUG": "false",
    "SECRET_KEY": "x7Gq2vL9pR4tW8zB1nM6cK3hJ5dF0sA-yU2iO7eQ9wT4rE1uY6oP3aS8dG5fH2jK",
    "ALLOWED_HOSTS": "gpucatalog.example",
}


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
