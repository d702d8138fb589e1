"""Helpers for scraper tests: recorded exchanges served through the real client factory."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.core.management import call_command

from offerings import writer
from offerings.management.commands.load_catalog import read_fixture
from offerings.schemas import ExchangeRateCatalog, GpuCatalog, ProviderCatalog
from providers.http import make_client
from providers.replay import ReplayTransport

RECORDINGS = Path(__file__).parent / "recordings"
SHARED_REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference"


class Sleeps(list):
    """Records the delays a client would have slept, without sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def replay(sleeps):
    """Open a client that serves `recordings/<path>/manifest.json`; checks all of it was used."""
    transports: list[ReplayTransport] = []

    def open_client(path: str, *, check_all_used: bool = True) -> httpx.Client:
        transport = ReplayTransport(RECORDINGS / path / "manifest.json")
        if check_all_used:
            transports.append(transport)
        return make_client(transport, sleep=sleeps, rng=lambda: 0.5)

    yield open_client
    for transport in transports:
        assert transport.unused() == [], f"{transport.manifest}: entries never requested"


SCRAPED_PROVIDERS = (
    "aws",
    "azure",
    "lambda",
    "oci",
    "datacrunch",
    "runpod",
    "vast",
    "gcp",
    "nebius",
)


def load_scraped_providers() -> None:
    """The curated catalog of the providers with scrapers, as `load_catalog` loads it."""
    fixtures = Path(settings.BASE_DIR) / "fixtures"
    writer.load_catalog(
        read_fixture(fixtures / "gpus.toml", GpuCatalog).gpus,
        read_fixture(fixtures / "exchange_rates.toml", ExchangeRateCatalog).rates,
        [
            read_fixture(fixtures / "providers" / f"{slug}.toml", ProviderCatalog)
            for slug in SCRAPED_PROVIDERS
        ],
    )


@pytest.fixture
def catalog(db):
    """The curated catalog of the scraped providers, from fixtures/."""
    load_scraped_providers()


def replay_command(path: Path | str, *providers: str, **settings_kwargs) -> str:
    """Run refresh_prices --replay and return what it printed."""
    from io import StringIO

    out = StringIO()
    args = ["refresh_prices", "--replay", str(RECORDINGS / path)]
    for slug in providers:
        args += ["--provider", slug]
    call_command(*args, stdout=out)
    return out.getvalue()
