"""Oracle Cloud (OCI) public price list: on-demand prices of the GPU bare-metal shapes.

No key. One `GET` of the price list in USD. OCI prices GPU shapes per GPU-hour under one part
number per GPU generation (`metricName` "GPU Per Hour", OCPUs and memory included), so a shape's
price is the part's price x the shape's GPU count, from the explicit table below. The list has
no regions: OCI charges the same list price in every commercial region, so the price is written
into the regions named by `OCI_PRICE_REGIONS` (default: the region the curated catalog lists),
with availability unknown (capacity per region needs the authenticated API). The list has no
spot price (OCI's preemptible capacity is documented as 50 % off, not listed) and no reserved
price, so only on-demand prices are read.
"""

from __future__ import annotations

import httpx
from pydantic import ValidationError

from offerings.schemas import RejectedRow, ScrapeBatch, ScrapedOffer, instance_slug
from providers.base import (
    JsonNumber,
    ProviderModel,
    ScrapeContext,
    ScrapeError,
    describe_error,
    read_json,
)

SLUG = "oci"
API_URL = "https://apexapps.oracle.com/pls/apex/cetools/api/v1/products/"
CURRENCY = "USD"
SOURCE_URL = f"{API_URL}?currencyCode={CURRENCY}"
DEFAULT_REGIONS = ("eu-amsterdam-1",)
GPU_METRIC = "GPU Per Hour"
PAY_AS_YOU_GO = "PAY_AS_YOU_GO"

# Price-list part number -> the multi-GPU shapes it prices, with their GPU counts. Part numbers
# as quoted by public client code (API_NOTES.md section 7, third-party evidence): B93544 "GPU E4"
# (A100 40GB), B95907 A100-v2 (80GB), B98415 H100, B110519 H200, B109485 MI300X, B109479 L40S,
# B95909 A10, B92740 "GPU E3" (V100). Shapes not curated (BM.GPU3.8 and the 2- and 4-GPU V100
# VMs) reach the review queue with their shape named; single-GPU VMs are out of scope. A
# GPU part not listed here (B200, GB200, GB300, B109480 "H100T") goes to the review queue at its
# per-GPU price, never guessed onto a shape.
PART_SHAPES: dict[str, tuple[tuple[str, int], ...]] = {
    "B93544": (("BM.GPU4.8", 8),),
    "B95907": (("BM.GPU.A100-v2.8", 8),),
    "B98415": (("BM.GPU.H100.8", 8),),
    "B110519": (("BM.GPU.H200.8", 8),),
    "B109485": (("BM.GPU.MI300X.8", 8),),
    "B109479": (("BM.GPU.L40S.4", 4),),
    "B95909": (("VM.GPU.A10.2", 2), ("BM.GPU.A10.4", 4)),
    "B92740": (("VM.GPU3.2", 2), ("VM.GPU3.4", 4), ("BM.GPU3.8", 8)),
}

# Part number -> GPU slug, for what the review queue shows.
PART_GPUS = {
    "B93544": "a100-sxm-40gb",
    "B95907": "a100-sxm-80gb",
    "B98415": "h100-sxm",
    "B110519": "h200-sxm",
    "B109485": "mi300x",
    "B109479": "l40s",
    "B95909": "a10",
    "B92740": "v100-sxm2-16gb",
}

REGION_GEO_PREFIXES = (
    ("us-", "na"),
    ("ca-", "na"),
    ("mx-", "na"),
    ("sa-", "sa"),
    ("eu-", "eu"),
    ("uk-", "eu"),
    ("me-", "me"),
    ("il-", "me"),
    ("af-", "af"),
    ("ap-", "asia"),
)
# Australian regions are ap-sydney-1 / ap-melbourne-1: Oceania, not Asia.
OCEANIA_REGIONS = frozenset({"ap-sydney-1", "ap-melbourne-1"})

# Fields of the documented answer; anything else is schema drift worth a warning on the run.
PAGE_FIELDS = frozenset({"items"})
ITEM_FIELDS = frozenset(
    {
        "partNumber",
        "displayName",
        "metricName",
        "serviceCategory",
        "currencyCodeLocalizations",
    }
)


class OciPrice(ProviderModel):
    model: str
    value: JsonNumber


class OciLocalization(ProviderModel):
    currencyCode: str
    prices: list[OciPrice]


class OciProduct(ProviderModel):
    partNumber: str
    displayName: str
    metricName: str
    serviceCategory: str
    currencyCodeLocalizations: list[OciLocalization]


def geo_for(region: str) -> str:
    if region in OCEANIA_REGIONS:
        return "oc"
    return next((geo for prefix, geo in REGION_GEO_PREFIXES if region.startswith(prefix)), "")


def is_gpu_item(raw: object) -> bool:
    """A GPU part: listed in the table, or filed under a GPU service category by Oracle."""
    if not isinstance(raw, dict):
        return True  # not an object: let parse_item reject it with its reason
    if raw.get("partNumber") in PART_SHAPES:
        return True
    category = raw.get("serviceCategory")
    return isinstance(category, str) and "GPU" in category.upper()


def _targets(part: str) -> tuple[tuple[str | None, str, int], ...]:
    """(instance slug, sku, GPU count) per shape a part prices; an unknown part prices itself."""
    shapes = PART_SHAPES.get(part)
    if not shapes:
        return ((None, part, 1),)
    return tuple((instance_slug(shape), shape, count) for shape, count in shapes)


def _rejected(part: str, reason: str, regions: tuple[str, ...]) -> list[RejectedRow]:
    """One rejected row per offer the part would have priced, so each keeps its stored price."""
    return [
        RejectedRow(sku=sku, reason=reason, instance_slug=slug, region=region, kind="on-demand")
        for slug, sku, _ in _targets(part)
        for region in regions
    ]


def parse_item(raw: object, regions: tuple[str, ...]) -> list[ScrapedOffer] | list[RejectedRow]:
    """One GPU price-list item -> an on-demand offer per shape and region, or rejected rows."""
    if not isinstance(raw, dict):
        return [RejectedRow(reason=f"item is not an object: {raw!r:.80}")]
    part = raw.get("partNumber") if isinstance(raw.get("partNumber"), str) else ""
    try:
        item = OciProduct.model_validate(raw)
    except ValidationError as exc:
        return _rejected(part, describe_error(exc), regions)
    if item.metricName != GPU_METRIC:
        return _rejected(part, f"unexpected metricName {item.metricName!r}", regions)
    localized = [loc for loc in item.currencyCodeLocalizations if loc.currencyCode == CURRENCY]
    if not localized and len(item.currencyCodeLocalizations) == 1:
        # Asked for USD, answered in another currency: priced as stated, so the upsert can
        # refuse it for want of a reference rate instead of taking it as dollars.
        localized = item.currencyCodeLocalizations
    if len(localized) != 1:
        return _rejected(
            part, f"expected one {CURRENCY} price localization, got {len(localized)}", regions
        )
    payg = [p.value for p in localized[0].prices if p.model == PAY_AS_YOU_GO]
    if len(payg) != 1:
        return _rejected(part, f"expected one {PAY_AS_YOU_GO} price, got {len(payg)}", regions)
    per_gpu = payg[0]
    offers = []
    for slug, sku, gpu_count in _targets(item.partNumber):
        parsed = {
            "partNumber": item.partNumber,
            "displayName": item.displayName,
            "metricName": item.metricName,
            "gpu": PART_GPUS.get(item.partNumber),
            "gpu_count": gpu_count if slug else None,
            "price_per_gpu_hour": str(per_gpu),
        }
        for region in regions:
            try:
                offers.append(
                    ScrapedOffer(
                        sku=sku,
                        instance_slug=slug,
                        region=region,
                        geo=geo_for(region),
                        kind="on-demand",
                        price_per_hour=per_gpu * gpu_count,
                        currency=localized[0].currencyCode,
                        source_url=f"{API_URL}?currencyCode={CURRENCY}&partNumber={part}",
                        parsed=parsed,
                    )
                )
            except ValidationError as exc:
                return _rejected(part, describe_error(exc), regions)
    return offers


def _get_products(client: httpx.Client, ctx: ScrapeContext) -> list:
    # Reference: https://docs.oracle.com/en-us/iaas/Content/GSG/Tasks/signingup_topic-Estimating_Costs.htm
    ctx.progress("oci: price list")
    response = client.get(API_URL, params={"currencyCode": CURRENCY})
    data = read_json(response, "oci price list")
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ScrapeError("oci price list: the answer has no 'items' list")
    if set(data) - PAGE_FIELDS:
        ctx.warn(f"oci: undocumented answer field(s) {sorted(set(data) - PAGE_FIELDS)}")
    return items


def fetch(client: httpx.Client, ctx: ScrapeContext) -> ScrapeBatch:
    """Every GPU part of the price list, as on-demand prices of the shapes it prices."""
    regions = tuple(ctx.regions) or DEFAULT_REGIONS
    offers: list[ScrapedOffer] = []
    rejected: list[RejectedRow] = []
    for raw in _get_products(client, ctx):
        if not is_gpu_item(raw):
            continue
        drift = set(raw) - ITEM_FIELDS if isinstance(raw, dict) else set()
        if drift:
            ctx.warn(f"oci: undocumented item field(s) {sorted(drift)}")
        for row in parse_item(raw, regions):
            (offers if isinstance(row, ScrapedOffer) else rejected).append(row)
    return ScrapeBatch(offers=tuple(offers), rejected=tuple(rejected), warnings=tuple(ctx.warnings))
