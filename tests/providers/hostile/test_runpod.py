"""Hostile answers from RunPod: each variant of the good recording, built at test time by the
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

# -- RunPod edits (US-TX-3's Secure Cloud answer: A100 PCIe x2/x4/x8, A100 SXM x2/x4) ------------


def _rp_answers(data: dict, gpu: str = "NVIDIA A100 80GB PCIe") -> dict:
    return next(t for t in data["data"]["gpuTypes"] if t["id"] == gpu)


def _rp_rename(data: dict) -> dict:
    for gpu in data["data"]["gpuTypes"]:
        for count in ("n2", "n4", "n8"):
            gpu[count]["uninterruptiblePrice"] = gpu[count].pop("uninterruptablePrice")
    return data


def _rp_missing(data: dict) -> dict:
    del _rp_answers(data)["n8"]["stockStatus"]
    return data


def _rp_wrong_types(data: dict) -> dict:
    _rp_answers(data)["n8"]["uninterruptablePrice"] = "1.62"
    _rp_answers(data)["n4"]["stockStatus"] = 3
    return data


def _rp_bad_prices(data: dict) -> dict:
    _rp_answers(data)["n2"]["uninterruptablePrice"] = -1.62
    _rp_answers(data)["n4"]["minimumBidPrice"] = 0
    _rp_answers(data, "NVIDIA A100-SXM4-80GB")["n4"]["uninterruptablePrice"] = 9999
    return data


def _rp_duplicates(data: dict) -> dict:
    pcie = _rp_answers(data)
    sxm = json.loads(dump_json(_rp_answers(data, "NVIDIA A100-SXM4-80GB")))
    sxm["n2"]["uninterruptablePrice"] = 2.5
    data["data"]["gpuTypes"] += [dict(pcie), sxm]
    return data


def _rp_empty(data: dict) -> dict:
    data["data"]["gpuTypes"] = []
    return data


def _rp_graphql_error(data: dict) -> dict:
    return {"errors": [{"message": "Something went wrong. Please try again later."}], "data": None}


CASES = [
    Case("runpod", "truncated-json", "failed", ("runpod secure prices US-TX-3", "not valid JSON")),
    Case("runpod", "html-200", "failed", ("expected JSON from https://api.runpod.io/graphql",)),
    Case(
        "runpod",
        "renamed-field",
        "succeeded",
        (
            "uninterruptablePrice: Field required",
            "undocumented lowestPrice field(s) ['uninterruptiblePrice']",
        ),
        _rp_rename,
    ),
    Case("runpod", "missing-field", "succeeded", ("stockStatus: Field required",), _rp_missing),
    Case(
        "runpod",
        "wrong-types",
        "succeeded",
        ("expected a JSON number, got str '1.62'", "stockStatus: Input should be a valid string"),
        _rp_wrong_types,
    ),
    Case(
        "runpod",
        "bad-prices",
        "succeeded",
        ("price_per_hour: Input should be greater than 0", "implausible price"),
        _rp_bad_prices,
    ),
    Case(
        "runpod",
        "duplicates",
        "succeeded",
        (
            "duplicate of an earlier row with the same price",
            "conflicting prices for the same offer",
        ),
        _rp_duplicates,
    ),
    Case("runpod", "empty", "rejected", ("row-count guard: 8 row(s) fetched",), _rp_empty),
    Case(
        "runpod",
        "graphql-error-200",
        "failed",
        ("runpod secure prices US-TX-3: GraphQL error: Something went wrong",),
        _rp_graphql_error,
        stops=True,
    ),
    Case("runpod", "429-then-success", "succeeded", ()),
    Case(
        "runpod",
        "500-until-give-up",
        "failed",
        ("HTTP 500 Internal Server Error", "(after retries)"),
    ),
    Case("runpod", "timeout", "failed", ("timed out waiting for https://api.runpod.io/graphql",)),
]
# RunPod's GraphQL answers are unpaged and carry no currency (US dollars by definition).
NOT_APPLICABLE = frozenset({"paging-loop", "unknown-currency"})


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_hostile_answer_leaves_every_good_price_as_it_was_with_the_reason_recorded(
    catalog, db, settings, sleeps, tmp_path, case
):
    assert_built_variant_case(case, settings, sleeps, tmp_path)


def test_every_variant_is_a_case_or_marked_not_applicable():
    covered = {c.variant for c in CASES} | NOT_APPLICABLE
    assert VARIANTS - covered == set()
