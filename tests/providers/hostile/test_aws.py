"""Hostile answers from AWS: each stored variant under `recordings/hostile/aws/`
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
    ("truncated-json", "failed", ["is not valid JSON after"]),
    ("html-200", "failed", ["aws region index: expected JSON", "text/html"]),
    (
        "renamed-field",
        "failed",
        [
            "all 6 row(s) were rejected",
            "pricePerUnit: Field required",
            "undocumented price dimension field(s) ['price']",
        ],
    ),
    (
        "missing-field",
        "succeeded",
        ["has no instanceType", "attributes.gpu: Input should be a valid string"],
    ),
    (
        "wrong-types",
        "succeeded",
        [
            "expected a number in a string, got Decimal",
            "expected a decimal number, got 'thirty-two'",
        ],
    ),
    ("bad-prices", "succeeded", ["greater than 0", "too large to store"]),
    ("unknown-currency", "succeeded", ["no reference exchange rate for XYZ"]),
    ("duplicates", "succeeded", ["duplicate of an earlier row", "conflicting prices"]),
    ("version-url-loop", "failed", ["offer file has no products"]),
    ("empty", "failed", ["the provider returned no offers"]),
    ("429-then-success", "succeeded", []),
    (
        "500-until-give-up",
        "failed",
        ["HTTP 500 Internal Server Error", "(after retries)", "InternalError"],
    ),
    ("timeout", "failed", ["timed out waiting for", "us-east-1/index.json"]),
]
# AWS does not page: its analogue, a region index pointing back at itself, is version-url-loop.
NOT_APPLICABLE = frozenset({"paging-loop"})


@pytest.mark.parametrize(("variant", "status", "reasons"), CASES)
def test_a_hostile_answer_leaves_every_good_price_as_it_was_with_the_reason_recorded(
    catalog, db, settings, sleeps, variant, status, reasons
):
    assert_recorded_variant_case("aws", variant, status, reasons, settings, sleeps)


def test_every_stored_variant_is_a_case():
    assert recorded_variants("aws") == {variant for variant, *_ in CASES}


def test_every_variant_is_a_case_or_marked_not_applicable():
    covered = {variant for variant, *_ in CASES} | NOT_APPLICABLE
    assert VARIANTS - covered == set()
