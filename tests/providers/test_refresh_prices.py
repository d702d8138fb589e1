"""refresh_prices: provider selection, summary, exit codes, failures recorded on the run."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from offerings.models import ScrapeRun
from tests.providers.conftest import RECORDINGS


def refresh(*args: str) -> str:
    out = StringIO()
    call_command("refresh_prices", *args, stdout=out)
    return out.getvalue()


def test_an_unknown_provider_is_refused_naming_the_known_ones(db):
    with pytest.raises(CommandError, match=r"no scraper for nosuch; known: .*azure"):
        refresh("--provider", "nosuch")


def test_replay_and_record_exclude_each_other(db, tmp_path):
    with pytest.raises(CommandError, match="cannot be used together"):
        refresh("--replay", str(tmp_path), "--record", str(tmp_path))


def test_a_provider_missing_from_the_catalog_asks_for_load_catalog(db):
    with pytest.raises(CommandError, match=r"run `manage\.py load_catalog` first"):
        refresh("--provider", "azure", "--replay", str(RECORDINGS / "azure"))


def test_a_replay_folder_without_a_manifest_fails_that_provider_with_exit_1(catalog, tmp_path):
    with pytest.raises(CommandError, match="azure: failed") as raised:
        refresh("--provider", "azure", "--replay", str(tmp_path))
    assert raised.value.returncode == 1
    run = ScrapeRun.objects.get(provider__slug="azure")
    assert run.status == "failed"
    assert "no manifest at" in run.error_messages[0]


def test_the_summary_names_every_count_and_the_status(catalog, settings):
    settings.AZURE_PRICE_REGIONS = []
    output = refresh("--provider", "azure", "--replay", str(RECORDINGS / "azure"))
    for column in ("fetched", "created", "updated", "unchanged", "retired", "rejected", "errors"):
        assert column in output
    assert "succeeded" in output
