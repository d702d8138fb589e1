"""Hostile answers from Google Cloud: each variant of the good recording, built at test time by the
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

# -- GCP edits (page 2 of the recorded SKU list: the A100, A100 80GB and H100 GPU SKUs) ----------


def _gcp_sku(data: dict, description: str) -> dict:
    return next(s for s in data["skus"] if s["description"] == description)


def _gcp_money(data: dict, description: str) -> dict:
    expression = _gcp_sku(data, description)["pricingInfo"][0]["pricingExpression"]
    return expression["tieredRates"][0]["unitPrice"]


A100 = "Nvidia Tesla A100 GPU running in Americas"
A100_SPOT = "Spot Preemptible Nvidia Tesla A100 GPU running in Americas"
A100_80 = "Nvidia A100 80GB GPU running in Americas"
A100_80_SPOT = "Spot Preemptible Nvidia A100 80GB GPU running in Americas"


def _gcp_rename(data: dict) -> dict:
    for item in data["skus"]:
        rate = item["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]
        rate["unit_price"] = rate.pop("unitPrice")
    return data


def _gcp_missing(data: dict) -> dict:
    del _gcp_sku(data, A100_80)["serviceRegions"]
    return data


def _gcp_wrong_types(data: dict) -> dict:
    _gcp_money(data, A100)["units"] = 2
    _gcp_money(data, A100_SPOT)["nanos"] = "147200000"
    return data


def _gcp_bad_prices(data: dict) -> dict:
    _gcp_money(data, A100)["units"] = "-1"
    _gcp_money(data, A100_SPOT).update(units="0", nanos=0)
    _gcp_money(data, A100_80)["units"] = "9999"
    return data


def _gcp_unknown_currency(data: dict) -> dict:
    _gcp_money(data, A100_80)["currencyCode"] = "XYZ"
    return data


def _gcp_duplicates(data: dict) -> dict:
    same = json.loads(dump_json(_gcp_sku(data, A100)))
    other = json.loads(dump_json(_gcp_sku(data, A100_80_SPOT)))
    other["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]["nanos"] = 9000000
    data["skus"] += [same, other]
    return data


def _gcp_paging_loop(data: dict) -> dict:
    data["nextPageToken"] = "CgRwYWdlMg"  # page 1's token again
    return data


CASES = [
    Case("gcp", "truncated-json", "failed", ("gcp SKUs page 2", "is not valid JSON")),
    Case("gcp", "html-200", "failed", ("expected JSON from https://cloudbilling.googleapis.com",)),
    Case(
        "gcp",
        "renamed-field",
        "failed",
        ("row(s) were rejected", "unitPrice: Field required", "a component SKU was rejected"),
        _gcp_rename,
    ),
    Case("gcp", "missing-field", "succeeded", ("serviceRegions: Field required",), _gcp_missing),
    Case(
        "gcp",
        "wrong-types",
        "succeeded",
        ("expected an int64 in a string, got int 2", "nanos: Input should be a valid integer"),
        _gcp_wrong_types,
    ),
    Case(
        "gcp",
        "bad-prices",
        "succeeded",
        (
            "unit price -0.066092 is not positive",
            "unit price 0 is not positive",
            "implausible price",
        ),
        _gcp_bad_prices,
    ),
    Case(
        "gcp",
        "unknown-currency",
        "succeeded",
        ("components priced in different currencies ['USD', 'XYZ']",),
        _gcp_unknown_currency,
    ),
    Case(
        "gcp",
        "duplicates",
        "succeeded",
        ("a component SKU is listed twice with different prices",),
        _gcp_duplicates,
    ),
    Case("gcp", "paging-loop", "failed", ("gcp SKUs: paging loop",), _gcp_paging_loop),
    Case(
        "gcp",
        "empty",
        "failed",
        ("the provider returned no offers",),
        lambda data: {"skus": [], "nextPageToken": ""},
    ),
    Case("gcp", "429-then-success", "succeeded", ()),
    Case(
        "gcp", "500-until-give-up", "failed", ("HTTP 500 Internal Server Error", "(after retries)")
    ),
    Case(
        "gcp", "timeout", "failed", ("timed out waiting for https://cloudbilling.googleapis.com",)
    ),
]
NOT_APPLICABLE: frozenset[str] = frozenset()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_hostile_answer_leaves_every_good_price_as_it_was_with_the_reason_recorded(
    catalog, db, settings, sleeps, tmp_path, case
):
    assert_built_variant_case(case, settings, sleeps, tmp_path)


def test_every_variant_is_a_case_or_marked_not_applicable():
    covered = {c.variant for c in CASES} | NOT_APPLICABLE
    assert VARIANTS - covered == set()
