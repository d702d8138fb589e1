"""refresh_prices: provider selection, summary, exit codes, failures recorded on the run."""

from __future__ import annotations

from io import StringIO

import httpx
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


def test_record_writes_a_replayable_recording_with_the_api_key_redacted(
    catalog, settings, tmp_path, monkeypatch
):
    """A live run (the network faked at the transport) recorded, then replayed to the same prices."""
    from providers import http
    from providers.replay import ReplayTransport

    settings.LAMBDA_API_KEY = "sk-live-secret"
    recorded = ReplayTransport(RECORDINGS / "lambda" / "manifest.json")

    def network(request):
        assert request.headers["Authorization"] == "Bearer sk-live-secret"
        response = recorded.handle_request(request)
        if request.url.path.endswith("/regions"):
            # An answer that echoes the key must not leak it into the recording.
            body = response.read().replace(b"Virginia, USA", b"Virginia (sk-live-secret)")
            return httpx.Response(200, headers=response.headers, content=body)
        return response

    monkeypatch.setattr(http, "live_transport", lambda: httpx.MockTransport(network))
    refresh("--provider", "lambda", "--record", str(tmp_path))
    live = ScrapeRun.objects.get(provider__slug="lambda")
    assert live.status == "succeeded"

    files = list((tmp_path / "lambda").iterdir())
    assert {f.name for f in files} >= {"manifest.json"}
    assert all(b"sk-live-secret" not in f.read_bytes() for f in files)
    assert b"Virginia (REDACTED)" in b"".join(f.read_bytes() for f in files)

    settings.LAMBDA_API_KEY = ""
    refresh("--provider", "lambda", "--replay", str(tmp_path / "lambda"))
    replayed = ScrapeRun.objects.filter(provider__slug="lambda").latest()
    assert (replayed.status, replayed.unchanged, replayed.created) == ("succeeded", 28, 0)


def test_a_crashing_scraper_fails_its_run_instead_of_leaving_it_running(catalog, monkeypatch):
    from providers import registry
    from providers.http import make_client
    from providers.refresh import refresh_provider

    def broken(client, ctx):
        raise KeyError("Items")

    scraper = registry.SCRAPERS["azure"]
    monkeypatch.setitem(
        registry.SCRAPERS, "azure", registry.Scraper("azure", broken, scraper.api_key_setting)
    )
    with make_client(httpx.MockTransport(lambda request: httpx.Response(500))) as client:
        run = refresh_provider("azure", client)
    assert (run.status, run.error_messages) == ("failed", ["scraper error: KeyError: 'Items'"])
