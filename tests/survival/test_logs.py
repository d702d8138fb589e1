"""Structured logs: with LOG_FORMAT=json every line of a refresh run names its run and provider."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from offerings.models import ScrapeRun
from tests.providers.conftest import RECORDINGS, load_scraped_providers
from tests.survival.conftest import ROOT, database_url

pytestmark = pytest.mark.django_db(transaction=True)


def test_with_log_format_json_each_line_of_a_refresh_is_json_naming_its_run_and_provider():
    load_scraped_providers()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REFRESH_", "LOG_"))}
    env |= {"DJANGO_ENV": "test", "DATABASE_URL": database_url(), "LOG_FORMAT": "json"}
    command = [sys.executable, "manage.py", "refresh_prices", "--provider", "lambda"]
    result = subprocess.run(
        [*command, "--replay", str(RECORDINGS / "lambda")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr

    [run] = ScrapeRun.objects.filter(provider__slug="lambda")
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    during = [line for line in lines if "run_id" in line]
    assert len(during) >= 2, result.stderr  # the scraper's HTTP requests at least
    assert {(line["run_id"], line["provider"]) for line in during} == {(run.pk, "lambda")}
    assert all({"time", "level", "logger", "message"} <= line.keys() for line in lines)
    assert all("provider" not in line for line in lines if "run_id" not in line)
