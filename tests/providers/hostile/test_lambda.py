"""Hostile answers from Lambda: each stored variant under `recordings/hostile/lambda/`
(built from the good recording) ingests correctly or fails with its reason recorded, and no
previously good price changes or vanishes (see `tests.providers.hostile_support`).
"""

from __future__ import annotations

import pytest

# `scraped_catalog` is this module's `catalog` fixture: the catalog loaded once per module.
from tests.providers.hostile_support import (
    VARIANTS,
    assert_recorded_variant_case,
    recorded_variants,
    scraped_catalog,  # noqa: F401
)

# (variant, status, what the run must record, in its errors, rejected rows or warnings)
CASES = [
    ("truncated-json", "failed", ["lambda instance types", "is not valid JSON"]),
    (
        "html-200",
        "failed",
        ["expected JSON from https://cloud.lambda.ai/api/v1/instance-types"],
    ),
    (
        "renamed-field",
        "failed",
        [
            "row(s) were rejected",
            "instance_type.price_cents_per_hour: Field required",
            "undocumented instance_type field(s) ['price_cents']",
        ],
    ),
    ("missing-field", "succeeded", ["instance_type.specs: Field required"]),
    (
        "wrong-types",
        "succeeded",
        [
            "price_cents_per_hour: Input should be a valid integer",
            "regions_with_capacity_available: Input should be a valid list",
        ],
    ),
    ("bad-prices", "succeeded", ["greater than 0", "too large to store"]),
    ("duplicates", "succeeded", ["listed more than once"]),
    ("empty", "failed", ["the provider returned no offers"]),
    ("429-then-success", "succeeded", []),
    ("500-until-give-up", "failed", ["HTTP 500 Internal Server Error", "lambda regions"]),
    (
        "timeout",
        "failed",
        ["timed out waiting for https://cloud.lambda.ai/api/v1/instance-types"],
    ),
]
# Lambda has no currency field (prices are US cents by definition) and does not page.
NOT_APPLICABLE = frozenset({"unknown-currency", "paging-loop"})


@pytest.mark.parametrize(("variant", "status", "reasons"), CASES)
def test_a_hostile_answer_leaves_every_good_price_as_it_was_with_the_reason_recorded(
    catalog, db, settings, sleeps, variant, status, reasons
):
    assert_recorded_variant_case("lambda", variant, status, reasons, settings, sleeps)


def test_every_stored_variant_is_a_case():
    assert recorded_variants("lambda") == {variant for variant, *_ in CASES}


def test_every_variant_is_a_case_or_marked_not_applicable():
    covered = {variant for variant, *_ in CASES} | NOT_APPLICABLE
    assert VARIANTS - covered == set()
