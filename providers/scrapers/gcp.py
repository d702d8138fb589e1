"""Google Cloud Billing Catalog API: on-demand and Spot prices of GPU machine types, assembled.

Needs GCP_API_KEY (the `key` query parameter, which recordings redact); without it the provider
is skipped. GCP has no price per machine type: the catalog prices components (a family's
"Instance Core" per vCPU-hour, its "Instance Ram" per GiB-hour, each GPU per GPU-hour), so a
machine type's price is vCPUs x core + GiB x RAM + GPUs x GPU, in every region where all its
components are priced, from the explicit machine table below (the Billing Catalog knows no
machine shapes). `usageType` OnDemand is on-demand and Preemptible is Spot; committed-use
prices are resource-based, not per machine, and are not read. Machine types Google does not sell
as plain on-demand (A3 Ultra, A4, A4X: Spot, flex-start, calendar mode and reservations only)
get Spot prices only. All Compute Engine SKUs are read page by page (`nextPageToken`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated

import httpx
from pydantic import BeforeValidator, ValidationError

from offerings.schemas import RejectedRow, ScrapeBatch, ScrapedOffer, instance_slug
from providers.base import ProviderModel, ScrapeContext, ScrapeError, describe_error, read_json

SLUG = "gcp"
SERVICE = "6F81-5844-456A"  # Compute Engine
API_URL = f"https://cloudbilling.googleapis.com/v1/services/{SERVICE}/skus"
SOURCE_URL = "https://cloud.google.com/compute/gpus-pricing"
PAGE_SIZE = 5000
MAX_PAGES = 100
KINDS = {"OnDemand": "on-demand", "Preemptible": "spot"}
UNITS = {"core": "h", "ram": "GiBy.h", "gpu": "h"}


@dataclass(frozen=True)
class Machine:
    family: str  # the family whose Instance Core / Instance Ram SKUs price the host
    vcpus: int
    ram_gib: int
    gpu: str  # a GPU component key (GPU_SKUS)
    gpus: int
    on_demand: bool = True  # sold as plain on-demand


# Machine type -> its shape, from Google's accelerator-optimized machine table (as curated in
# fixtures/providers/gcp.toml). The name is the curated slug by the contract's rule. a3-highgpu
# 1/2/4g, a3-ultragpu, a4 and a4x are not sold on-demand
# (https://cloud.google.com/compute/docs/accelerator-optimized-machines#consumption_option_availability_by_machine_type).
MACHINES = {
    "a2-highgpu-8g": Machine("a2", 96, 680, "a100-40gb", 8),
    "a2-megagpu-16g": Machine("a2", 96, 1360, "a100-40gb", 16),
    "a2-ultragpu-8g": Machine("a2", 96, 1360, "a100-80gb", 8),
    "a3-highgpu-8g": Machine("a3", 208, 1872, "h100", 8),
    "a3-megagpu-8g": Machine("a3plus", 208, 1872, "h100-mega", 8),
    "a3-ultragpu-8g": Machine("a3ultra", 224, 2952, "h200", 8, on_demand=False),
    "a4-highgpu-8g": Machine("a4", 224, 3968, "b200", 8, on_demand=False),
    "g2-standard-96": Machine("g2", 96, 384, "l4", 8),
}

# SKU description (after an optional "Spot Preemptible " prefix, before " running in <place>")
# -> component. Family names as Google writes them (API_NOTES.md section 3; A3 Mega's host is
# "A3Plus"). A GPU SKU not listed is ignored: it prices no machine in the table.
HOST_SKUS = {
    "A2 Instance Core": ("a2", "core"),
    "A2 Instance Ram": ("a2", "ram"),
    "A3 Instance Core": ("a3", "core"),
    "A3 Instance Ram": ("a3", "ram"),
    "A3Plus Instance Core": ("a3plus", "core"),
    "A3Plus Instance Ram": ("a3plus", "ram"),
    "A3Ultra Instance Core": ("a3ultra", "core"),
    "A3Ultra Instance Ram": ("a3ultra", "ram"),
    "A4 Instance Core": ("a4", "core"),
    "A4 Instance Ram": ("a4", "ram"),
    "G2 Instance Core": ("g2", "core"),
    "G2 Instance Ram": ("g2", "ram"),
}
GPU_SKUS = {
    "Nvidia Tesla A100 GPU": "a100-40gb",
    "Nvidia A100 80GB GPU": "a100-80gb",
    "Nvidia H100 80GB GPU": "h100",
    "Nvidia H100 80GB Mega GPU": "h100-mega",
    "Nvidia H200 141GB GPU": "h200",
    "Nvidia B200 GPU": "b200",
    "Nvidia L4 GPU": "l4",
}
DESCRIPTION = re.compile(r"^(?:Spot Preemptible )?(?P<what>.+?) running in (?P<place>.+)$")

# Documented SKU fields (https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list).
SKU_FIELDS = frozenset(
    {
        "name",
        "skuId",
        "description",
        "category",
        "serviceRegions",
        "pricingInfo",
        "serviceProviderName",
        "geoTaxonomy",
    }
)


def _int64(value: object) -> object:
    """Google writes int64 as a JSON string ("units": "2"); accept exactly that."""
    if not isinstance(value, str) or not re.fullmatch(r"-?\d+", value):
        raise ValueError(f"expected an int64 in a string, got {type(value).__name__} {value!r}")
    return int(value)


Int64 = Annotated[int, BeforeValidator(_int64)]


class Money(ProviderModel):
    currencyCode: str
    units: Int64 = 0
    nanos: int = 0


class TieredRate(ProviderModel):
    startUsageAmount: int | Decimal = 0
    unitPrice: Money


class PricingExpression(ProviderModel):
    usageUnit: str
    tieredRates: list[TieredRate]


class PricingInfo(ProviderModel):
    pricingExpression: PricingExpression


class Category(ProviderModel):
    resourceFamily: str
    resourceGroup: str = ""
    usageType: str


class Sku(ProviderModel):
    skuId: str
    description: str
    category: Category
    serviceRegions: list[str]
    pricingInfo: list[PricingInfo]


class SkuPage(ProviderModel):
    skus: list[dict]
    nextPageToken: str = ""


@dataclass(frozen=True)
class UnitPrice:
    sku: str  # skuId, to name it in a conflict
    amount: Decimal
    currency: str


def component_of(description: str) -> tuple[str, str] | None:
    """("a2", "core"), ("gpu", "a100-40gb") ... for a description, or None when not needed."""
    match = DESCRIPTION.match(description)
    if not match:
        return None
    what = match["what"]
    if what in HOST_SKUS:
        return HOST_SKUS[what]
    if what in GPU_SKUS:
        return ("gpu", GPU_SKUS[what])
    return None


def unit_price(money: Money) -> Decimal:
    return Decimal(money.units) + Decimal(money.nanos) / Decimal(1_000_000_000)


def parse_sku(raw: object) -> list[tuple[tuple, UnitPrice]] | RejectedRow | None:
    """One SKU -> ((region, family, part, kind), unit price) per region, a rejection, or None."""
    description = raw.get("description") if isinstance(raw, dict) else None
    if not isinstance(description, str) or component_of(description) is None:
        return None  # not a component of a machine in the table
    family, part = component_of(description)
    try:
        sku = Sku.model_validate(raw)
    except ValidationError as exc:
        return RejectedRow(sku=description, reason=describe_error(exc))
    kind = KINDS.get(sku.category.usageType)
    if kind is None:
        return None  # committed-use and other usage types price no machine-hour
    if len(sku.pricingInfo) != 1:
        return RejectedRow(sku=description, reason=f"{len(sku.pricingInfo)} pricingInfo entries")
    expression = sku.pricingInfo[0].pricingExpression
    unit = UNITS["gpu" if family == "gpu" else part]
    if expression.usageUnit != unit:
        reason = f"usageUnit {expression.usageUnit!r}, expected {unit!r}"
        return RejectedRow(sku=description, reason=reason)
    first = [t for t in expression.tieredRates if t.startUsageAmount == 0]
    if len(first) != 1:
        return RejectedRow(sku=description, reason="no single first-tier rate")
    money = first[0].unitPrice
    price = UnitPrice(sku.skuId, unit_price(money), money.currencyCode)
    if price.amount <= 0:
        return RejectedRow(sku=description, reason=f"unit price {price.amount} is not positive")
    return [((region, family, part, kind), price) for region in sku.serviceRegions]


def assemble(
    name: str, machine: Machine, region: str, kind: str, prices: dict[tuple, UnitPrice]
) -> ScrapedOffer | RejectedRow | str:
    """A machine's price in a region, a rejection, or a note saying which component is missing."""
    parts = {
        "core": prices.get((region, machine.family, "core", kind)),
        "ram": prices.get((region, machine.family, "ram", kind)),
        "gpu": prices.get((region, "gpu", machine.gpu, kind)),
    }
    missing = [part for part, price in parts.items() if price is None]
    if missing:
        return f"{name} {kind} in {region}: no {', '.join(missing)} price"
    currencies = {p.currency for p in parts.values()}
    if len(currencies) != 1:
        reason = f"components priced in different currencies {sorted(currencies)}"
        return RejectedRow(sku=name, reason=reason, instance_slug=instance_slug(name),
                           region=region, kind=kind)  # fmt: skip
    total = (
        machine.vcpus * parts["core"].amount
        + machine.ram_gib * parts["ram"].amount
        + machine.gpus * parts["gpu"].amount
    )
    try:
        return ScrapedOffer(
            sku=name,
            instance_slug=instance_slug(name),
            region=region,
            geo=geo_for(region),
            kind=kind,
            price_per_hour=total,
            currency=currencies.pop(),
            source_url=SOURCE_URL,
            parsed={
                "vcpus": machine.vcpus,
                "ram_gib": machine.ram_gib,
                "gpu_count": machine.gpus,
                "unit_prices": {k: str(p.amount) for k, p in parts.items()},
                "skus": {k: p.sku for k, p in parts.items()},
            },
        )
    except ValidationError as exc:
        return RejectedRow(sku=name, reason=describe_error(exc), instance_slug=instance_slug(name),
                           region=region, kind=kind)  # fmt: skip


def geo_for(region: str) -> str:
    prefix = region.split("-", 1)[0]
    return {
        "us": "na",
        "northamerica": "na",
        "southamerica": "sa",
        "europe": "eu",
        "me": "me",
        "africa": "af",
        "asia": "asia",
        "australia": "oc",
    }.get(prefix, "")


def _broken_keys(raw: object) -> set[tuple]:
    """The price keys a rejected SKU would have given, as far as its raw fields say."""
    component = component_of(raw["description"])
    category = raw.get("category")
    usage = category.get("usageType") if isinstance(category, dict) else None
    kinds = [KINDS[usage]] if usage in KINDS else list(KINDS.values())
    regions = raw.get("serviceRegions")
    if not isinstance(regions, list) or not all(isinstance(r, str) for r in regions):
        regions = [None]  # unreadable: every region
    return {(region, *component, kind) for region in regions for kind in kinds}


def _get_skus(client: httpx.Client, ctx: ScrapeContext):
    """Every Compute Engine SKU, page by page."""
    # Reference: https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list
    token = ""
    seen: set[str] = set()
    for page_number in range(1, MAX_PAGES + 1):
        params = {"key": ctx.api_key, "pageSize": str(PAGE_SIZE), "currencyCode": "USD"}
        if token:
            params["pageToken"] = token
        ctx.progress(f"gcp: SKUs page {page_number}")
        data = read_json(client.get(API_URL, params=params), f"gcp SKUs page {page_number}")
        try:
            page = SkuPage.model_validate(data)
        except ValidationError as exc:
            raise ScrapeError(
                f"gcp SKUs page {page_number}: not a SKU page ({describe_error(exc)})"
            ) from None
        yield from page.skus
        if not page.nextPageToken:
            return
        if page.nextPageToken in seen:
            raise ScrapeError(f"gcp SKUs: paging loop, page token {page.nextPageToken!r} repeats")
        seen.add(page.nextPageToken)
        token = page.nextPageToken
    raise ScrapeError(f"gcp SKUs: more than {MAX_PAGES} pages, giving up")


def fetch(client: httpx.Client, ctx: ScrapeContext) -> ScrapeBatch:
    """Every machine type of the table, priced in every region where all its parts are priced."""
    prices: dict[tuple, UnitPrice] = {}
    conflicts: set[tuple] = set()
    broken: set[tuple] = set()
    rejected: list[RejectedRow] = []
    for raw in _get_skus(client, ctx):
        if isinstance(raw, dict) and set(raw) - SKU_FIELDS:
            ctx.warn(f"gcp: undocumented SKU field(s) {sorted(set(raw) - SKU_FIELDS)}")
        result = parse_sku(raw)
        if isinstance(result, RejectedRow):
            rejected.append(result)
            broken |= _broken_keys(raw)
            continue
        for key, price in result or ():
            if key in prices and prices[key].amount != price.amount:
                conflicts.add(key)
            prices.setdefault(key, price)
    wanted = set(ctx.regions)
    regions = sorted({key[0] for key in prices if not wanted or key[0] in wanted})
    offers: list[ScrapedOffer] = []
    missing: dict[str, list[str]] = defaultdict(list)
    for name, machine in MACHINES.items():
        for region in regions:
            for kind in ("on-demand", "spot"):
                if kind == "on-demand" and not machine.on_demand:
                    continue
                needed = {
                    (region, machine.family, "core", kind),
                    (region, machine.family, "ram", kind),
                    (region, "gpu", machine.gpu, kind),
                }
                reason = None
                if needed & conflicts:
                    reason = "a component SKU is listed twice with different prices"
                elif needed & broken or {(None, *key[1:]) for key in needed} & broken:
                    reason = "a component SKU was rejected"
                if reason:
                    rejected.append(RejectedRow(sku=name, reason=f"{reason}; stored price kept",
                                                region=region, kind=kind,
                                                instance_slug=instance_slug(name)))  # fmt: skip
                    continue
                if (region, "gpu", machine.gpu, kind) not in prices:
                    continue  # the GPU is not sold there: no such machine in this region
                result = assemble(name, machine, region, kind, prices)
                if isinstance(result, str):
                    missing[name].append(result)
                elif isinstance(result, RejectedRow):
                    rejected.append(result)
                else:
                    offers.append(result)
    for notes in missing.values():
        ctx.warn(
            f"gcp: cannot assemble {notes[0]}"
            + (f" (+{len(notes) - 1} more)" if len(notes) > 1 else "")
        )
    return ScrapeBatch(offers=tuple(offers), rejected=tuple(rejected), warnings=tuple(ctx.warnings))
