"""What the hostile-variant tests (`tests/providers/hostile/`, one module per provider) share.

Each case first replays the provider's good recording (one region for Azure and AWS), then a
variant of it: broken JSON, an HTML page with status 200, renamed or missing fields, wrong types,
bad prices, an unknown currency, duplicates, a paging loop, an empty answer, 429 then success,
500s until the retries run out, and timeouts. The variant either ingests correctly or fails with
its reason recorded on the refresh run, while no previously good price changes or vanishes.
Azure's, AWS's and Lambda's variants are stored under `recordings/hostile/<provider>/<variant>/`;
the other providers' are built at test time from the good recording by the small edit named in
each case, so the edit sits next to what it must cause. Retries run through the real client
factory with sleeping recorded, not done.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command

from offerings.models import Offer, ScrapeRun
from providers.http import make_client
from providers.refresh import refresh_provider
from providers.replay import ReplayTransport
from tests.providers.conftest import RECORDINGS, load_scraped_providers

HOSTILE = RECORDINGS / "hostile"
# Every variant a provider's API is tried with, unless its module marks it not applicable.
VARIANTS = frozenset(
    {
        "truncated-json",
        "html-200",
        "renamed-field",
        "missing-field",
        "wrong-types",
        "bad-prices",
        "unknown-currency",
        "duplicates",
        "paging-loop",
        "empty",
        "429-then-success",
        "500-until-give-up",
        "timeout",
    }
)


@pytest.fixture(scope="module", name="catalog")
def scraped_catalog(django_db_setup, django_db_blocker):
    """The curated catalog, loaded once for a module (each test still rolls back its own)."""
    with django_db_blocker.unblock():
        load_scraped_providers()
    yield
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


def snapshot(provider: str) -> dict:
    """Every offer of the provider with the values a buyer sees."""
    return {
        (o.instance.slug, o.region.code, o.kind, o.term_months): (
            o.price_per_hour,
            o.currency,
            o.price_per_gpu_hour_usd,
            o.is_active,
            o.available,
        )
        for o in Offer.objects.filter(instance__provider__slug=provider).select_related(
            "instance", "region"
        )
    }


def replay_run(provider: str, manifest: Path, sleeps) -> tuple[ScrapeRun, ReplayTransport]:
    transport = ReplayTransport(manifest)
    with make_client(transport, sleep=sleeps, rng=lambda: 0.5) as client:
        return refresh_provider(provider, client, replaying=True), transport


def assert_variant_left_prices_alone(
    provider: str, manifest: Path, status: str, reasons, sleeps, retry_after: float
) -> None:
    """Replay the good recording, then `manifest`: the run ends as `status`, naming `reasons`."""
    good, _ = replay_run(provider, RECORDINGS / provider / "manifest.json", sleeps)
    assert good.status == "succeeded", good.error_messages
    before = snapshot(provider)
    assert before
    variant = manifest.parent.name

    run, transport = replay_run(provider, manifest, sleeps)

    assert run.status == status, (run.error_messages, run.rejected_rows[:3])
    recorded = " | ".join(
        [*run.error_messages, *(r["reason"] for r in run.rejected_rows), *run.warnings]
    )
    for reason in reasons:
        assert reason in recorded
    assert snapshot(provider) == before
    assert transport.unused() == [], "every recorded exchange was requested"
    if status == "failed":
        assert run.errors == 1
        assert (run.created, run.updated) == (0, 0)
    if variant == "429-then-success":
        assert sleeps == [retry_after]
        assert (run.created, run.updated, run.rejected) == (0, 0, 0)
    if variant in ("500-until-give-up", "timeout"):
        assert len(sleeps) == 3


# The stored variants' providers: settings for their good run, and the Retry-After they ask.
ONE_REGION = {
    "azure": {"AZURE_PRICE_REGIONS": ["eastus"]},
    "aws": {"AWS_PRICE_REGIONS": ["us-east-1"]},
    "lambda": {"LAMBDA_API_KEY": ""},
}
RECORDED_RETRY_AFTER = {"azure": 3.0, "aws": 2.0, "lambda": 1.0}


def recorded_variants(provider: str) -> set[str]:
    return {p.parent.name for p in (HOSTILE / provider).glob("*/manifest.json")}


def assert_recorded_variant_case(provider, variant, status, reasons, settings, sleeps) -> None:
    for name, value in ONE_REGION[provider].items():
        setattr(settings, name, value)
    manifest = HOSTILE / provider / variant / "manifest.json"
    retry_after = RECORDED_RETRY_AFTER[provider]
    assert_variant_left_prices_alone(provider, manifest, status, reasons, sleeps, retry_after)


def assert_built_variant_case(case: Case, settings, sleeps, tmp_path: Path) -> None:
    provider = PROVIDERS[case.provider]
    for name, value in provider.settings.items():
        setattr(settings, name, value)
    manifest = build_variant(case, tmp_path / case.variant)
    assert_variant_left_prices_alone(
        case.provider, manifest, case.status, case.reasons, sleeps, provider.retry_after
    )


# -- building a variant from the good recording ---------------------------------------------

HTML_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>Service Unavailable</title></head>\n"
    "<body><h1>Service Unavailable</h1><p>Please try again later.</p></body></html>\n"
)

Edit = Callable[[object], object]


@dataclass(frozen=True)
class Provider:
    """A provider's good recording and which of its exchanges carries the prices."""

    slug: str
    target: str  # the body file of the price exchange the variants break
    settings: dict = field(default_factory=dict)
    retry_after: float = 1.0


PROVIDERS = {
    "oci": Provider("oci", "products.json", {"OCI_PRICE_REGIONS": []}),
    "gcp": Provider("gcp", "skus-page-2.json", {"GCP_API_KEY": "", "GCP_PRICE_REGIONS": []}),
    "vast": Provider("vast", "offers.json", {"VAST_API_KEY": ""}),
    "runpod": Provider("runpod", "secure-US-TX-3.json", {"RUNPOD_API_KEY": ""}),
    "datacrunch": Provider(
        "datacrunch",
        "instance-types.json",
        {"DATACRUNCH_CLIENT_ID": "", "DATACRUNCH_CLIENT_SECRET": ""},
    ),
}


@dataclass(frozen=True)
class Case:
    provider: str
    variant: str
    status: str
    reasons: tuple[str, ...]
    edit: Edit | None = None  # a change to the target body's decoded JSON
    stops: bool = False  # the run ends at the target: later exchanges are never asked for

    @property
    def id(self) -> str:
        return f"{self.provider}-{self.variant}"


# -- building a variant ---------------------------------------------------------------------------


def dump_json(data: object) -> str:
    return json.dumps(data, indent=1, default=lambda d: float(d) if isinstance(d, Decimal) else d)


def _load(path: Path) -> object:
    return json.loads(path.read_text(), parse_float=Decimal)


def build_variant(case: Case, folder: Path) -> Path:
    """Copy the good recording into `folder` and break it as the case says; the manifest path."""
    provider = PROVIDERS[case.provider]
    shutil.copytree(RECORDINGS / provider.slug, folder)
    manifest = folder / "manifest.json"
    entries = json.loads(manifest.read_text())
    index = next(i for i, e in enumerate(entries) if e.get("body") == provider.target)
    target = entries[index]
    body = folder / provider.target
    if case.edit is not None:
        body.write_text(dump_json(case.edit(_load(body))))
        if case.stops:
            del entries[index + 1 :]
    elif case.variant == "truncated-json":
        text = body.read_text()
        body.write_text(text[: len(text) // 2])
        del entries[index + 1 :]  # the run stops at the broken answer
    elif case.variant == "html-200":
        body.write_text(HTML_PAGE)
        target["content_type"] = "text/html"
        del entries[index + 1 :]
    elif case.variant == "429-then-success":
        (folder / "429.json").write_text('{"error": "Too Many Requests"}\n')
        limited = {
            **target,
            "status": 429,
            "body": "429.json",
            "headers": {"Retry-After": str(int(provider.retry_after))},
        }
        entries.insert(index, limited)
    elif case.variant in ("500-until-give-up", "timeout"):
        # Every attempt fails; nothing after the price exchange is asked for.
        if case.variant == "timeout":
            failing = {k: v for k, v in target.items() if k in ("method", "url", "request_body")}
            failing["error"] = "timeout"
        else:
            (folder / "500.json").write_text('{"error": "Internal Server Error"}\n')
            failing = {**target, "status": 500, "body": "500.json"}
        entries[index:] = [failing] * 4
    else:
        raise AssertionError(f"no way to build {case.variant}")
    manifest.write_text(json.dumps(entries, indent=2))
    return manifest
