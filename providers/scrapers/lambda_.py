"""Lambda Cloud API: on-demand instance types with their capacity by region.

Needs LAMBDA_API_KEY (HTTP Bearer); without it the provider is skipped. `GET /instance-types`
gives each type's price in US cents per instance-hour and the regions with capacity now;
`GET /regions` lists every region. Prices are per account, not per region, so each type is
offered in every listed region at the same price, `available` telling whether that region has
capacity now (a sold-out type stays listed). There are no spot or reserved prices in the API.
"""

from __future__ import annotations

from decimal import Decimal

import httpx
from pydantic import ValidationError

from offerings.schemas import RejectedRow, ScrapeBatch, ScrapedOffer, instance_slug
from providers.base import ProviderModel, ScrapeContext, ScrapeError, describe_error, read_json

SLUG = "lambda"
API_URL = "https://cloud.lambda.ai/api/v1"
SOURCE_URL = "https://cloud.lambda.ai/api/v1/instance-types"

# API instance-type name -> curated instance slug (fixtures/providers/lambda.toml). Several
# curated types carry the name of Lambda's web page ("8x NVIDIA B200 SXM6"), so the table is
# needed; a name not listed maps by the contract's slug rule (gpu_8x_h100_sxm5 ->
# gpu-8x-h100-sxm5) or goes to the review queue.
INSTANCE_SLUGS = {
    "gpu_8x_h100_sxm5": "gpu-8x-h100-sxm5",
    "gpu_8x_a100": "gpu-8x-a100",
    "gpu_4x_a6000": "gpu-4x-a6000",
    "gpu_8x_b200_sxm6": "8x-nvidia-b200-sxm6",
    "gpu_4x_b200_sxm6": "4x-nvidia-b200-sxm6",
    "gpu_8x_a100_80gb_sxm4": "8x-nvidia-a100-sxm-80-gb",
    "gpu_4x_h100_sxm5": "4x-nvidia-h100-sxm",
    "gpu_2x_h100_sxm5": "2x-nvidia-h100-sxm",
    "gpu_2x_b200_sxm6": "2x-nvidia-b200-sxm6",
}

# gpu_description -> GPU slug, for the review queue ("H100 (80 GB SXM5)" in the OpenAPI example).
GPU_SLUGS = {
    "H100 (80 GB SXM5)": "h100-sxm",
    "H100 (80 GB PCIe)": "h100-pcie",
    "A100 (80 GB SXM4)": "a100-sxm-80gb",
    "A100 (40 GB SXM4)": "a100-sxm-40gb",
    "A100 (40 GB PCIe)": "a100-pcie-40gb",
    "B200 (180 GB SXM6)": "b200",
    "GH200 (96 GB)": "gh200",
    "A6000 (48 GB)": "rtx-a6000",
    "A10 (24 GB PCIe)": "a10",
    "V100 (16 GB)": "v100-sxm2-16gb",
}

# Documented fields (OpenAPI v1.10.0); others are schema drift worth a warning on the run.
ITEM_FIELDS = frozenset({"instance_type", "regions_with_capacity_available"})
TYPE_FIELDS = frozenset({"name", "description", "gpu_description", "price_cents_per_hour", "specs"})
SPEC_FIELDS = frozenset({"vcpus", "memory_gib", "storage_gib", "gpus"})

REGION_GEO_PREFIXES = (("us-", "na"), ("europe-", "eu"), ("asia-", "asia"), ("me-", "me"))


class LambdaSpecs(ProviderModel):
    vcpus: int
    memory_gib: int
    storage_gib: int
    gpus: int


class LambdaInstanceType(ProviderModel):
    name: str
    description: str
    gpu_description: str
    price_cents_per_hour: int
    specs: LambdaSpecs


class LambdaRegion(ProviderModel):
    name: str
    description: str = ""


class LambdaItem(ProviderModel):
    instance_type: LambdaInstanceType
    regions_with_capacity_available: list[LambdaRegion]


def mapped_slug(name: str) -> str:
    return INSTANCE_SLUGS.get(name) or instance_slug(name)


def geo_for(region: str) -> str:
    return next((geo for prefix, geo in REGION_GEO_PREFIXES if region.startswith(prefix)), "")


def _headers(ctx: ScrapeContext) -> dict[str, str]:
    return {"Authorization": f"Bearer {ctx.api_key}"}


def _get_regions(client: httpx.Client, ctx: ScrapeContext) -> list[LambdaRegion]:
    # Reference: https://docs.lambda.ai/api/cloud#listRegions
    data = read_json(client.get(f"{API_URL}/regions", headers=_headers(ctx)), "lambda regions")
    raw = data.get("data") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        raise ScrapeError("lambda regions: the answer has no 'data' list")
    try:
        return [LambdaRegion.model_validate(r) for r in raw]
    except ValidationError as exc:
        raise ScrapeError(f"lambda regions: {describe_error(exc)}") from None


def _get_instance_types(client: httpx.Client, ctx: ScrapeContext) -> dict:
    # Reference: https://docs.lambda.ai/api/cloud#listInstanceTypes
    response = client.get(f"{API_URL}/instance-types", headers=_headers(ctx))
    data = read_json(response, "lambda instance types")
    raw = data.get("data") if isinstance(data, dict) else None
    if not isinstance(raw, dict):
        raise ScrapeError("lambda instance types: the answer has no 'data' object")
    return raw


def parse_item(
    key: str, raw: object, regions: dict[str, str]
) -> list[ScrapedOffer] | RejectedRow | None:
    """One instance type -> an offer per region, a rejected row, or None (single GPU, unlisted)."""
    try:
        item = LambdaItem.model_validate(raw)
    except ValidationError as exc:
        return RejectedRow(sku=key, reason=describe_error(exc), instance_slug=mapped_slug(key))
    kind = item.instance_type
    if kind.name != key:
        return RejectedRow(sku=key, reason=f"listed as {key!r} but named {kind.name!r}")
    if kind.name not in INSTANCE_SLUGS and kind.specs.gpus < 2:
        return None  # single-GPU types are outside the catalog's scope
    capacity = {r.name for r in item.regions_with_capacity_available}
    parsed = {
        "description": kind.description,
        "gpu": GPU_SLUGS.get(kind.gpu_description),
        "gpu_description": kind.gpu_description,
        "gpu_count": kind.specs.gpus,
        "vcpus": kind.specs.vcpus,
        "memory_gib": kind.specs.memory_gib,
        "storage_gib": kind.specs.storage_gib,
    }
    offers = []
    for region, description in sorted(
        (regions | dict.fromkeys(capacity - set(regions), "")).items()
    ):
        try:
            offers.append(
                ScrapedOffer(
                    sku=kind.name,
                    instance_slug=mapped_slug(kind.name),
                    region=region,
                    region_name=description,
                    geo=geo_for(region),
                    kind="on-demand",
                    price_per_hour=Decimal(kind.price_cents_per_hour) / 100,
                    currency="USD",
                    available=region in capacity,
                    source_url=SOURCE_URL,
                    parsed=parsed,
                )
            )
        except ValidationError as exc:
            return RejectedRow(
                sku=kind.name,
                reason=describe_error(exc),
                instance_slug=mapped_slug(kind.name),
                region=region,
                kind="on-demand",
            )
    return offers


def _notice_drift(raw: object, ctx: ScrapeContext) -> None:
    """Warn (once per run) about fields Lambda's OpenAPI document does not list."""
    kind = raw.get("instance_type") if isinstance(raw, dict) else None
    specs = kind.get("specs") if isinstance(kind, dict) else None
    for what, obj, known in (
        ("item", raw, ITEM_FIELDS),
        ("instance_type", kind, TYPE_FIELDS),
        ("specs", specs, SPEC_FIELDS),
    ):
        if isinstance(obj, dict) and set(obj) - known:
            ctx.warn(f"lambda: undocumented {what} field(s) {sorted(set(obj) - known)}")


def fetch(client: httpx.Client, ctx: ScrapeContext) -> ScrapeBatch:
    """Every multi-GPU instance type, offered in every region, with its capacity there."""
    ctx.progress("lambda: regions")
    regions = {r.name: r.description for r in _get_regions(client, ctx)}
    if not regions:
        raise ScrapeError("lambda regions: the list is empty")
    ctx.progress("lambda: instance types")
    offers: list[ScrapedOffer] = []
    rejected: list[RejectedRow] = []
    types = _get_instance_types(client, ctx)
    duplicated = set(getattr(types, "duplicates", ()))
    for key, raw in types.items():
        if key in duplicated:
            # The answer lists this type more than once: trust neither copy.
            reason = "instance type listed more than once in the answer; stored prices kept"
            result = RejectedRow(sku=key, reason=reason, instance_slug=mapped_slug(key))
        else:
            _notice_drift(raw, ctx)
            result = parse_item(key, raw, regions)
        if isinstance(result, RejectedRow):
            # An unreadable type keeps its stored prices in every region.
            rejected += [
                result.model_copy(update={"region": r, "kind": "on-demand"}) for r in regions
            ]
        elif result:
            offers += result
    return ScrapeBatch(offers=tuple(offers), rejected=tuple(rejected), warnings=tuple(ctx.warnings))
