"""Hostile answers for the scrapers added after Azure, AWS and Lambda (issue 7).

Same rule as `test_hostile.py`: each case replays the provider's good recording, then a broken
variant of it, and the variant either ingests correctly or fails with its reason recorded on the
refresh run, while no previously good price changes or vanishes. The variants are not stored as
files: each is built at test time from the good recording in a temporary folder by the small
edit named in its case (one thing broken each), so the edit sits next to what it must cause.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import pytest

from offerings.models import ScrapeRun
from providers.http import make_client
from providers.refresh import refresh_provider
from providers.replay import ReplayTransport
from tests.providers.conftest import RECORDINGS

# `scraped_catalog` is this module's `catalog` fixture: the catalog loaded once per module.
from tests.providers.hostile_support import scraped_catalog, snapshot  # noqa: F401

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


def _dump(data: object) -> str:
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
        body.write_text(_dump(case.edit(_load(body))))
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
    other = json.loads(_dump(items[1]))
    other["currencyCodeLocalizations"][0]["prices"][0]["value"] = 40.0
    data["items"] += [same, other]
    return data


def _oci_empty(data: dict) -> dict:
    return {"items": []}


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
    sxm = json.loads(_dump(_rp_answers(data, "NVIDIA A100-SXM4-80GB")))
    sxm["n2"]["uninterruptablePrice"] = 2.5
    data["data"]["gpuTypes"] += [dict(pcie), sxm]
    return data


def _rp_empty(data: dict) -> dict:
    data["data"]["gpuTypes"] = []
    return data


def _rp_graphql_error(data: dict) -> dict:
    return {"errors": [{"message": "Something went wrong. Please try again later."}], "data": None}


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
    same = json.loads(_dump(_gcp_sku(data, A100)))
    other = json.loads(_dump(_gcp_sku(data, A100_80_SPOT)))
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
# Variants that have no meaning for a provider's API: the OCI price list and Verda's instance
# types are each one unpaged answer.
NOT_APPLICABLE = {
    ("oci", "paging-loop"),
    ("datacrunch", "paging-loop"),
    # RunPod's GraphQL answers are unpaged and carry no currency (US dollars by definition).
    ("runpod", "paging-loop"),
    ("runpod", "unknown-currency"),
    # Vast's search is one answer of up to 3000 offers, in US dollars by definition.
    ("vast", "paging-loop"),
    ("vast", "unknown-currency"),
}
VARIANTS = {
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


def replay_run(provider: str, manifest: Path, sleeps) -> tuple[ScrapeRun, ReplayTransport]:
    transport = ReplayTransport(manifest)
    with make_client(transport, sleep=sleeps, rng=lambda: 0.5) as client:
        return refresh_provider(provider, client, replaying=True), transport


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_hostile_answer_leaves_every_good_price_as_it_was_with_the_reason_recorded(
    catalog, db, settings, sleeps, tmp_path, case
):
    provider = PROVIDERS[case.provider]
    for name, value in provider.settings.items():
        setattr(settings, name, value)
    good, _ = replay_run(case.provider, RECORDINGS / provider.slug / "manifest.json", sleeps)
    assert good.status == "succeeded", good.error_messages
    before = snapshot(case.provider)
    assert before

    manifest = build_variant(case, tmp_path / case.variant)
    run, transport = replay_run(case.provider, manifest, sleeps)

    assert run.status == case.status, (run.error_messages, run.rejected_rows[:3])
    recorded = " | ".join(
        [*run.error_messages, *(r["reason"] for r in run.rejected_rows), *run.warnings]
    )
    for reason in case.reasons:
        assert reason in recorded
    assert snapshot(case.provider) == before
    assert transport.unused() == [], "every recorded exchange was requested"
    if case.status == "failed":
        assert run.errors == 1
        assert (run.created, run.updated) == (0, 0)
    if case.variant == "429-then-success":
        assert sleeps == [provider.retry_after]
        assert (run.created, run.updated, run.rejected) == (0, 0, 0)
    if case.variant in ("500-until-give-up", "timeout"):
        assert len(sleeps) == 3


def test_every_provider_has_every_variant_or_marks_it_not_applicable():
    for slug in PROVIDERS:
        covered = {c.variant for c in CASES if c.provider == slug}
        covered |= {v for p, v in NOT_APPLICABLE if p == slug}
        assert VARIANTS - covered == set(), f"{slug}: missing {VARIANTS - covered}"
