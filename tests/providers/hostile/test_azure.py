"""Hostile answers from Azure: each stored variant under `recordings/hostile/azure/`
(built from the good recording) ingests correctly or fails with its reason recorded, and no
previously good price changes or vanishes (see `tests.providers.hostile_support`).
"""

from __future__ import annotations

import pytest

from tests.providers.conftest import RECORDINGS

# `scraped_catalog` is this module's `catalog` fixture: the catalog loaded once per module.
from tests.providers.hostile_support import (
    HOSTILE,
    VARIANTS,
    assert_recorded_variant_case,
    recorded_variants,
    replay_run,
    scraped_catalog,  # noqa: F401
    snapshot,
)

# (variant, status, what the run must record, in its errors, rejected rows or warnings)
CASES = [
    ("truncated-json", "failed", ["is not valid JSON"]),
    ("html-200", "failed", ["expected JSON from", "text/html", "Service Unavailable"]),
    (
        "renamed-field",
        "failed",
        [
            "all 21 row(s) were rejected",
            "retailPrice: Field required",
            "undocumented item field(s) ['retail_price']",
        ],
    ),
    ("missing-field", "succeeded", ["retailPrice: Field required"]),
    (
        "wrong-types",
        "succeeded",
        [
            "expected a JSON number, got str '98.32'",
            "expected a JSON number, got bool",
            "armRegionName: Input should be a valid string",
        ],
    ),
    (
        "bad-prices",
        "succeeded",
        ["price_per_hour: Input should be greater than 0", "implausible price"],
    ),
    ("unknown-currency", "succeeded", ["no reference exchange rate for XYZ"]),
    (
        "duplicates",
        "succeeded",
        [
            "duplicate of an earlier row with the same price",
            "conflicting prices for the same offer: 2.991670 USD and 29.916700 USD",
        ],
    ),
    ("paging-loop", "failed", ["paging loop"]),
    ("empty", "failed", ["the provider returned no offers; nothing changed"]),
    ("429-then-success", "succeeded", []),
    ("500-until-give-up", "failed", ["HTTP 500 Internal Server Error", "(after retries)"]),
    (
        "timeout",
        "failed",
        ["timed out waiting for https://prices.azure.com", "(after retries; ReadTimeout)"],
    ),
]
NOT_APPLICABLE: frozenset[str] = frozenset()


@pytest.mark.parametrize(("variant", "status", "reasons"), CASES)
def test_a_hostile_answer_leaves_every_good_price_as_it_was_with_the_reason_recorded(
    catalog, db, settings, sleeps, variant, status, reasons
):
    assert_recorded_variant_case("azure", variant, status, reasons, settings, sleeps)


def test_every_stored_variant_is_a_case():
    assert recorded_variants("azure") == {variant for variant, *_ in CASES}


def test_every_variant_is_a_case_or_marked_not_applicable():
    covered = {variant for variant, *_ in CASES} | NOT_APPLICABLE
    assert VARIANTS - covered == set()


def test_a_rejected_bad_price_never_retires_its_offer_over_repeated_runs(
    catalog, db, settings, sleeps
):
    settings.AZURE_PRICE_REGIONS = ["eastus"]
    replay_run("azure", RECORDINGS / "azure" / "manifest.json", sleeps)
    before = snapshot("azure")
    for _ in range(3):
        replay_run("azure", HOSTILE / "azure" / "bad-prices" / "manifest.json", sleeps)
    assert snapshot("azure") == before
