"""Hostile answers from Verda (DataCrunch): each variant of the good recording, built at test time by the
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

# -- DataCrunch / Verda edits (the one multi-GPU type of the recording is 2A6000.20V) -----------


def _dc_type(data: list, name: str = "2A6000.20V") -> dict:
    return next(t for t in data if t["instance_type"] == name)


def _dc_extra(name: str, gpus: int, price: str) -> dict:
    """Another multi-GPU type, named as in the recorded availability list, at a given price."""
    return {
        "instance_type": name,
        "model": "Tesla V100",
        "cpu": {"description": "", "number_of_cores": 6 * gpus},
        "gpu": {"description": f"{gpus}x Tesla V100 16GB", "number_of_gpus": gpus},
        "gpu_memory": {"description": "", "size_in_gigabytes": 16 * gpus},
        "memory": {"description": "", "size_in_gigabytes": 23 * gpus},
        "price_per_hour": price,
        "spot_price": None,
        "currency": "usd",
    }


def _dc_rename_price(data: list) -> list:
    for item in data:
        item["price"] = item.pop("price_per_hour")
    return data


def _dc_drop_currency(data: list) -> list:
    del _dc_type(data)["currency"]
    data.append(_dc_extra("8V100.48V", 8, "7.12"))
    return data


def _dc_wrong_types(data: list) -> list:
    _dc_type(data)["price_per_hour"] = 1.98
    data.append(_dc_extra("8V100.48V", 8, "7.12") | {"gpu": {"number_of_gpus": "8"}})
    return data


def _dc_bad_prices(data: list) -> list:
    _dc_type(data)["price_per_hour"] = "9999.00"  # absurd: 4999.50 per GPU-hour
    data += [_dc_extra("8V100.48V", 8, "-7.12"), _dc_extra("4V100.20V", 4, "0")]
    return data


def _dc_unknown_currency(data: list) -> list:
    _dc_type(data)["currency"] = "xyz"
    return data


def _dc_duplicates(data: list) -> list:
    data.append(dict(_dc_type(data)) | {"price_per_hour": "2.50"})
    return data


CASES = [
    Case("datacrunch", "truncated-json", "failed", ("datacrunch instance types", "not valid JSON")),
    Case("datacrunch", "html-200", "failed", ("expected JSON from", "/v1/instance-types")),
    Case(
        "datacrunch",
        "renamed-field",
        "failed",
        ("row(s) were rejected", "price_per_hour: Field required", "field(s) ['price']"),
        _dc_rename_price,
    ),
    Case(
        "datacrunch", "missing-field", "succeeded", ("currency: Field required",), _dc_drop_currency
    ),
    Case(
        "datacrunch",
        "wrong-types",
        "failed",
        (
            "expected a number in a string, got Decimal",
            "number_of_gpus: Input should be a valid integer",
        ),
        _dc_wrong_types,
    ),
    Case(
        "datacrunch",
        "bad-prices",
        "succeeded",
        ("implausible price", "price_per_hour: Input should be greater than 0"),
        _dc_bad_prices,
    ),
    Case(
        "datacrunch",
        "unknown-currency",
        "failed",
        ("no reference exchange rate for XYZ",),
        _dc_unknown_currency,
    ),
    Case("datacrunch", "duplicates", "failed", ("listed more than once",), _dc_duplicates),
    Case("datacrunch", "empty", "failed", ("the provider returned no offers",), lambda data: []),
    Case("datacrunch", "429-then-success", "succeeded", ()),
    Case(
        "datacrunch",
        "500-until-give-up",
        "failed",
        ("HTTP 500 Internal Server Error", "(after retries)"),
    ),
    Case(
        "datacrunch",
        "timeout",
        "failed",
        ("timed out waiting for https://api.datacrunch.io/v1/instance-types",),
    ),
]
# Verda's instance types are one unpaged answer.
NOT_APPLICABLE = frozenset({"paging-loop"})


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_hostile_answer_leaves_every_good_price_as_it_was_with_the_reason_recorded(
    catalog, db, settings, sleeps, tmp_path, case
):
    assert_built_variant_case(case, settings, sleeps, tmp_path)


def test_every_variant_is_a_case_or_marked_not_applicable():
    covered = {c.variant for c in CASES} | NOT_APPLICABLE
    assert VARIANTS - covered == set()
