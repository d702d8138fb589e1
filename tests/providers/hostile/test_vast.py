"""Hostile answers from Vast.ai: each variant of the good recording, built at test time by the
small edit named in its case, ingests correctly or fails with its reason recorded, and no
previously good price changes or vanishes (see `tests.providers.hostile_support`).
"""

from __future__ import annotations

import pytest

# `scraped_catalog` is this module's `catalog` fixture: the catalog loaded once per module.
from tests.providers.hostile_support import (
    VARIANTS,
    Case,
    assert_built_variant_case,
    scraped_catalog,  # noqa: F401
)

# -- Vast.ai edits (the recorded search answer: 46 offers, one per bucket and region) ------------


def _vast_offer(data: dict, gpu: str = "RTX 4090", count: int = 8, where: str = "Utah, US"):
    return next(
        o
        for o in data["offers"]
        if (o["gpu_name"], o["num_gpus"], o["geolocation"]) == (gpu, count, where)
    )


def _vast_rename(data: dict) -> dict:
    for item in data["offers"]:
        item["dph"] = item.pop("dph_total")
    return data


def _vast_missing(data: dict) -> dict:
    del _vast_offer(data)["geolocation"]
    return data


def _vast_wrong_types(data: dict) -> dict:
    _vast_offer(data)["dph_total"] = "3.20"
    _vast_offer(data, "L40S", 8, "Slovenia, SI")["num_gpus"] = "8"
    return data


def _vast_bad_prices(data: dict) -> dict:
    _vast_offer(data)["dph_total"] = -3.2
    _vast_offer(data, "L40S", 8, "Slovenia, SI")["dph_total"] = 0
    _vast_offer(data, "H100 SXM", 8, "US")["dph_total"] = 99999
    return data


def _vast_duplicates(data: dict) -> dict:
    same = dict(_vast_offer(data))
    other = dict(_vast_offer(data, "L40S", 8, "Slovenia, SI")) | {"dph_total": 5.5}
    data["offers"] += [same, other]
    return data


CASES = [
    Case("vast", "truncated-json", "failed", ("vast offers", "is not valid JSON")),
    Case("vast", "html-200", "failed", ("expected JSON from https://console.vast.ai",)),
    Case(
        "vast",
        "renamed-field",
        "failed",
        ("all 46 row(s) were rejected", "dph_total: Field required", "field(s) ['dph']"),
        _vast_rename,
    ),
    Case("vast", "missing-field", "succeeded", ("geolocation: Field required",), _vast_missing),
    Case(
        "vast",
        "wrong-types",
        "succeeded",
        ("expected a JSON number, got str '3.20'", "num_gpus: Input should be a valid integer"),
        _vast_wrong_types,
    ),
    Case("vast", "bad-prices", "succeeded", ("implausible offer price",), _vast_bad_prices),
    Case(
        "vast",
        "duplicates",
        "succeeded",
        ("duplicate of an earlier listing of the same offer", "listed twice with different values"),
        _vast_duplicates,
    ),
    Case(
        "vast", "empty", "failed", ("the provider returned no offers",), lambda data: {"offers": []}
    ),
    Case("vast", "429-then-success", "succeeded", ()),
    Case(
        "vast", "500-until-give-up", "failed", ("HTTP 500 Internal Server Error", "(after retries)")
    ),
    Case("vast", "timeout", "failed", ("timed out waiting for https://console.vast.ai",)),
]
# Vast's search is one answer of up to 3000 offers, in US dollars by definition.
NOT_APPLICABLE = frozenset({"paging-loop", "unknown-currency"})


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_hostile_answer_leaves_every_good_price_as_it_was_with_the_reason_recorded(
    catalog, db, settings, sleeps, tmp_path, case
):
    assert_built_variant_case(case, settings, sleeps, tmp_path)


def test_every_variant_is_a_case_or_marked_not_applicable():
    covered = {c.variant for c in CASES} | NOT_APPLICABLE
    assert VARIANTS - covered == set()
