"""Hostile answers: each ingests correctly or fails with its reason recorded, and no previously
good price changes or vanishes.

Each case first replays the provider's good recording (one region for Azure and AWS), then a
variant from `recordings/hostile/<provider>/<variant>/` built from it: broken JSON, an HTML page
with status 200, renamed or missing fields, wrong types, bad prices, an unknown currency,
duplicates, a paging loop, an empty answer, 429 then success, 500s until the retries run out,
and timeouts. Retries run through the real client factory with sleeping recorded, not done.
"""

from __future__ import annotations

import pytest

from offerings.models import ScrapeRun
from providers.http import make_client
from providers.refresh import refresh_provider
from providers.replay import ReplayTransport
from tests.providers.conftest import RECORDINGS

# `scraped_catalog` is this module's `catalog` fixture: the catalog loaded once per module.
from tests.providers.hostile_support import scraped_catalog, snapshot  # noqa: F401

HOSTILE = RECORDINGS / "hostile"
ONE_REGION = {
    "azure": {"AZURE_PRICE_REGIONS": ["eastus"]},
    "aws": {"AWS_PRICE_REGIONS": ["us-east-1"]},
    "lambda": {"LAMBDA_API_KEY": ""},
}

# (provider, variant, status, what the run must record, in its errors, rejected rows or warnings)
CASES = [
    ("azure", "truncated-json", "failed", ["is not valid JSON"]),
    ("azure", "html-200", "failed", ["expected JSON from", "text/html", "Service Unavailable"]),
    (
        "azure",
        "renamed-field",
        "failed",
        [
            "all 21 row(s) were rejected",
            "retailPrice: Field required",
            "undocumented item field(s) ['retail_price']",
        ],
    ),
    ("azure", "missing-field", "succeeded", ["retailPrice: Field required"]),
    (
        "azure",
        "wrong-types",
        "succeeded",
        [
            "expected a JSON number, got str '98.32'",
            "expected a JSON number, got bool",
            "armRegionName: Input should be a valid string",
        ],
    ),
    (
        "azure",
        "bad-prices",
        "succeeded",
        ["price_per_hour: Input should be greater than 0", "implausible price"],
    ),
    ("azure", "unknown-currency", "succeeded", ["no reference exchange rate for XYZ"]),
    (
        "azure",
        "duplicates",
        "succeeded",
        [
            "duplicate of an earlier row with the same price",
            "conflicting prices for the same offer: 2.991670 USD and 29.916700 USD",
        ],
    ),
    ("azure", "paging-loop", "failed", ["paging loop"]),
    ("azure", "empty", "failed", ["the provider returned no offers; nothing changed"]),
    ("azure", "429-then-success", "succeeded", []),
    ("azure", "500-until-give-up", "failed", ["HTTP 500 Internal Server Error", "(after retries)"]),
    (
        "azure",
        "timeout",
        "failed",
        ["timed out waiting for https://prices.azure.com", "(after retries; ReadTimeout)"],
    ),
    ("aws", "truncated-json", "failed", ["is not valid JSON after"]),
    ("aws", "html-200", "failed", ["aws region index: expected JSON", "text/html"]),
    (
        "aws",
        "renamed-field",
        "failed",
        [
            "all 6 row(s) were rejected",
            "pricePerUnit: Field required",
            "undocumented price dimension field(s) ['price']",
        ],
    ),
    (
        "aws",
        "missing-field",
        "succeeded",
        ["has no instanceType", "attributes.gpu: Input should be a valid string"],
    ),
    (
        "aws",
        "wrong-types",
        "succeeded",
        [
            "expected a number in a string, got Decimal",
            "expected a decimal number, got 'thirty-two'",
        ],
    ),
    ("aws", "bad-prices", "succeeded", ["greater than 0", "too large to store"]),
    ("aws", "unknown-currency", "succeeded", ["no reference exchange rate for XYZ"]),
    ("aws", "duplicates", "succeeded", ["duplicate of an earlier row", "conflicting prices"]),
    ("aws", "version-url-loop", "failed", ["offer file has no products"]),
    ("aws", "empty", "failed", ["the provider returned no offers"]),
    ("aws", "429-then-success", "succeeded", []),
    (
        "aws",
        "500-until-give-up",
        "failed",
        ["HTTP 500 Internal Server Error", "(after retries)", "InternalError"],
    ),
    ("aws", "timeout", "failed", ["timed out waiting for", "us-east-1/index.json"]),
    ("lambda", "truncated-json", "failed", ["lambda instance types", "is not valid JSON"]),
    (
        "lambda",
        "html-200",
        "failed",
        ["expected JSON from https://cloud.lambda.ai/api/v1/instance-types"],
    ),
    (
        "lambda",
        "renamed-field",
        "failed",
        [
            "row(s) were rejected",
            "instance_type.price_cents_per_hour: Field required",
            "undocumented instance_type field(s) ['price_cents']",
        ],
    ),
    ("lambda", "missing-field", "succeeded", ["instance_type.specs: Field required"]),
    (
        "lambda",
        "wrong-types",
        "succeeded",
        [
            "price_cents_per_hour: Input should be a valid integer",
            "regions_with_capacity_available: Input should be a valid list",
        ],
    ),
    ("lambda", "bad-prices", "succeeded", ["greater than 0", "too large to store"]),
    ("lambda", "duplicates", "succeeded", ["listed more than once"]),
    ("lambda", "empty", "failed", ["the provider returned no offers"]),
    ("lambda", "429-then-success", "succeeded", []),
    ("lambda", "500-until-give-up", "failed", ["HTTP 500 Internal Server Error", "lambda regions"]),
    (
        "lambda",
        "timeout",
        "failed",
        ["timed out waiting for https://cloud.lambda.ai/api/v1/instance-types"],
    ),
]
# The provider APIs without the feature a variant needs: Lambda has no currency field (prices
# are US cents by definition) and neither AWS nor Lambda pages (AWS's analogue is a region index
# pointing back at itself: version-url-loop).
NOT_APPLICABLE = {("lambda", "unknown-currency"), ("lambda", "paging-loop"), ("aws", "paging-loop")}


def replay_run(provider: str, manifest, sleeps) -> tuple[ScrapeRun, ReplayTransport]:
    transport = ReplayTransport(manifest)
    with make_client(transport, sleep=sleeps, rng=lambda: 0.5) as client:
        return refresh_provider(provider, client, replaying=True), transport


@pytest.mark.parametrize(
    ("provider", "variant", "status", "reasons"), CASES, ids=[f"{p}-{v}" for p, v, *_ in CASES]
)
def test_a_hostile_answer_leaves_every_good_price_as_it_was_with_the_reason_recorded(
    catalog, db, settings, sleeps, provider, variant, status, reasons
):
    for name, value in ONE_REGION[provider].items():
        setattr(settings, name, value)
    good, _ = replay_run(provider, RECORDINGS / provider / "manifest.json", sleeps)
    assert good.status == "succeeded", good.error_messages
    before = snapshot(provider)

    run, transport = replay_run(provider, HOSTILE / provider / variant / "manifest.json", sleeps)

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
        assert sleeps == [{"azure": 3.0, "aws": 2.0, "lambda": 1.0}[provider]]
        assert (run.created, run.updated, run.rejected) == (0, 0, 0)
    if variant == "500-until-give-up" or variant == "timeout":
        assert len(sleeps) == 3


def test_every_hostile_variant_is_a_case_or_marked_not_applicable():
    on_disk = {(p.parent.parent.name, p.parent.name) for p in HOSTILE.glob("*/*/manifest.json")}
    cases = {(p, v) for p, v, *_ in CASES}
    assert on_disk == cases
    variants = {v for _, v, *_ in CASES} | {v for _, v in NOT_APPLICABLE}
    for provider in ONE_REGION:
        covered = {v for p, v, *_ in CASES if p == provider}
        missing = variants - covered - {v for p, v in NOT_APPLICABLE if p == provider}
        assert not missing - {"version-url-loop"}, f"{provider} lacks {missing}"


def test_a_rejected_bad_price_never_retires_its_offer_over_repeated_runs(
    catalog, db, settings, sleeps
):
    settings.AZURE_PRICE_REGIONS = ["eastus"]
    replay_run("azure", RECORDINGS / "azure" / "manifest.json", sleeps)
    before = snapshot("azure")
    for _ in range(3):
        replay_run("azure", HOSTILE / "azure" / "bad-prices" / "manifest.json", sleeps)
    assert snapshot("azure") == before
