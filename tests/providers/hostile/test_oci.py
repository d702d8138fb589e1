"""Hostile answers from Oracle Cloud: each variant of the good recording, built at test time by the
small edit named in its case, ingests correctly or fails with its reason recorded, and no
previously good price changes or vanishes (see `tests.providers.hostile_support`).
"""

from __future__ import annotations

import json

import pytest

# `scraped_catalog` is this module's `catalog` fixture: the catalog loaded once per module.
from tests.providers.hostile_support import (
    VARIANTS,
    Case,
    assert_built_variant_case,
    dump_json,
    scraped_catalog,  # noqa: F401
)

# -- OCI edits ------------------------------------------------------------------------------------


def _oci_gpu_items(data: dict) -> list[dict]:
    return [i for i in data["items"] if i["serviceCategory"] == "Compute - GPU"]


def _oci_rename_price(data: dict) -> dict:
    for item in _oci_gpu_items(data):
        for loc in item["currencyCodeLocalizations"]:
            loc["price_list"] = loc.pop("prices")
    return data


def _oci_drop_metric(data: dict) -> dict:
    del _oci_gpu_items(data)[0]["metricName"]
    return data


def _oci_wrong_types(data: dict) -> dict:
    items = _oci_gpu_items(data)
    items[0]["currencyCodeLocalizations"][0]["prices"][0]["value"] = "3.05"
    items[1]["partNumber"] = 95907
    return data


def _oci_bad_prices(data: dict) -> dict:
    items = _oci_gpu_items(data)
    items[0]["currencyCodeLocalizations"][0]["prices"][0]["value"] = -3.05
    items[1]["currencyCodeLocalizations"][0]["prices"][0]["value"] = 90000
    items[2]["currencyCodeLocalizations"][0]["prices"][0]["value"] = 0
    return data


def _oci_unknown_currency(data: dict) -> dict:
    _oci_gpu_items(data)[0]["currencyCodeLocalizations"][0]["currencyCode"] = "XYZ"
    return data


def _oci_duplicates(data: dict) -> dict:
    items = _oci_gpu_items(data)
    same = dict(items[0])
    other = json.loads(dump_json(items[1]))
    other["currencyCodeLocalizations"][0]["prices"][0]["value"] = 40.0
    data["items"] += [same, other]
    return data


def _oci_empty(data: dict) -> dict:
    return {"items": []}


CASES = [
    Case("oci", "truncated-json", "failed", ("oci price list", "is not valid JSON")),
    Case("oci", "html-200", "failed", ("expected JSON from", "text/html")),
    Case(
        "oci",
        "renamed-field",
        "failed",
        ("all 7 row(s) were rejected", "currencyCodeLocalizations.0.prices: Field required"),
        _oci_rename_price,
    ),
    Case("oci", "missing-field", "succeeded", ("metricName: Field required",), _oci_drop_metric),
    Case(
        "oci",
        "wrong-types",
        "succeeded",
        ("expected a JSON number, got str '3.05'", "partNumber: Input should be a valid string"),
        _oci_wrong_types,
    ),
    Case(
        "oci",
        "bad-prices",
        "succeeded",
        ("price_per_hour: Input should be greater than 0", "implausible price"),
        _oci_bad_prices,
    ),
    Case(
        "oci",
        "unknown-currency",
        "succeeded",
        ("no reference exchange rate for XYZ",),
        _oci_unknown_currency,
    ),
    Case(
        "oci",
        "duplicates",
        "succeeded",
        (
            "duplicate of an earlier row with the same price",
            "conflicting prices for the same offer",
        ),
        _oci_duplicates,
    ),
    Case("oci", "empty", "failed", ("the provider returned no offers",), _oci_empty),
    Case("oci", "429-then-success", "succeeded", ()),
    Case(
        "oci", "500-until-give-up", "failed", ("HTTP 500 Internal Server Error", "(after retries)")
    ),
    Case("oci", "timeout", "failed", ("timed out waiting for https://apexapps.oracle.com",)),
]
# The OCI price list is one unpaged answer.
NOT_APPLICABLE = frozenset({"paging-loop"})


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_hostile_answer_leaves_every_good_price_as_it_was_with_the_reason_recorded(
    catalog, db, settings, sleeps, tmp_path, case
):
    assert_built_variant_case(case, settings, sleeps, tmp_path)


def test_every_variant_is_a_case_or_marked_not_applicable():
    covered = {c.variant for c in CASES} | NOT_APPLICABLE
    assert VARIANTS - covered == set()
