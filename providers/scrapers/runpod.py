"""RunPod GraphQL API: per-GPU pod prices by data center (Secure Cloud) and country (Community
Cloud), spot bid floors, stock status, and Instant Cluster prices.

Needs RUNPOD_API_KEY (sent as the `api_key` query parameter, which recordings redact); without
it the provider is skipped. One discovery query lists the data centers, the country codes and
the GPU types; then one query per Secure Cloud data center and one per Community Cloud country
asks `lowestPrice` for 2, 4 and 8 GPUs at once (GraphQL aliases), and one query with
`cluster: true` gives the Instant Cluster price per GPU and the data centers that sell them.
Prices are per GPU-hour: an offer's price is that times its GPU count. `uninterruptablePrice` is
on-demand, `minimumBidPrice` the spot (interruptible) floor; a null price means not offered
there, `stockStatus` (High / Medium / Low / null) says whether it can be rented now. RunPod's
1-, 3- and 6-month commitment prices are not read (they are account-wide, not per location).
"""

from __future__ import annotations

import httpx
from pydantic import ValidationError

from offerings.schemas import RejectedRow, ScrapeBatch, ScrapedOffer
from providers.base import (
    JsonNumber,
    ProviderModel,
    ScrapeContext,
    ScrapeError,
    describe_error,
    read_json,
)

SLUG = "runpod"
API_URL = "https://api.runpod.io/graphql"
SOURCE_URL = "https://www.runpod.io/pricing"
GPU_COUNTS = (2, 4, 8)
CLUSTER_GPU_COUNT = 8
SECURE, COMMUNITY, CLUSTER = "secure", "community", "instant-cluster"

# RunPod gpuType id -> GPU slug. A GPU not listed goes to the review queue with its id.
GPU_SLUGS = {
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb",
    "NVIDIA A100-SXM4-80GB": "a100-sxm-80gb",
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H100 NVL": "h100-nvl",
    "NVIDIA H200": "h200-sxm",
    "NVIDIA B200": "b200",
    "AMD Instinct MI300X OAM": "mi300x",
    "NVIDIA L40S": "l40s",
    "NVIDIA GeForce RTX 4090": "rtx-4090",
    "NVIDIA RTX 6000 Ada Generation": "rtx-6000-ada",
    "NVIDIA RTX A6000": "rtx-a6000",
}

# (GPU slug, GPU count, cloud) -> curated instance slug (fixtures/providers/runpod.toml). The
# curated pods are Secure Cloud sizes; "8x H100 SXM (pod)" does not name a cloud and is priced
# from Secure Cloud, RunPod's list price. Anything else maps by the contract's rule for unnamed
# SKUs, `<count>x-<gpu>[-community|-instant-cluster]`, and goes to the review queue when nothing
# is curated under that slug.
INSTANCE_SLUGS = {
    ("a100-sxm-80gb", 8, SECURE): "8x-a100-sxm-80gb",
    ("a100-sxm-80gb", 4, SECURE): "4x-a100-sxm-80gb",
    ("a100-sxm-80gb", 2, SECURE): "2x-a100-sxm-80gb",
    ("a100-pcie-80gb", 8, SECURE): "8x-a100-pcie-80gb",
    ("a100-pcie-80gb", 4, SECURE): "4x-a100-pcie-80gb",
    ("a100-pcie-80gb", 2, SECURE): "2x-a100-pcie-80gb",
    ("h100-sxm", 8, SECURE): "8x-h100-sxm",
    ("h100-sxm", 8, CLUSTER): "8x-h100-sxm-instant-cluster",
    ("h200-sxm", 8, CLUSTER): "8x-h200-sxm-instant-cluster",
    ("b200", 8, CLUSTER): "8x-b200-instant-cluster",
    ("b200", 8, SECURE): "8x-b200",
    ("b200", 4, SECURE): "4x-b200",
    ("b200", 2, SECURE): "2x-b200",
    ("mi300x", 8, SECURE): "8x-mi300x",
    ("mi300x", 4, SECURE): "4x-mi300x",
    ("mi300x", 2, SECURE): "2x-mi300x",
}

GEO_PREFIXES = (
    ("US", "na"),
    ("CA", "na"),
    ("EU", "eu"),
    ("EUR", "eu"),
    ("AP", "asia"),
    ("OC", "oc"),
    ("SA", "sa"),
)
COUNTRY_GEO = {
    "US": "na",
    "CA": "na",
    "MX": "na",
    "BR": "sa",
    "IS": "eu",
    "NO": "eu",
    "SE": "eu",
    "FI": "eu",
    "NL": "eu",
    "DE": "eu",
    "FR": "eu",
    "GB": "eu",
    "CZ": "eu",
    "RO": "eu",
    "JP": "asia",
    "KR": "asia",
    "SG": "asia",
    "IN": "asia",
    "AU": "oc",
}

DISCOVERY_QUERY = (
    "query Discovery { countryCodes dataCenters { id name listed } "
    "gpuTypes { id displayName memoryInGb secureCloud communityCloud } }"
)
PRICE_FIELDS = "minimumBidPrice uninterruptablePrice minVcpu minMemory stockStatus"
CLUSTER_QUERY = (
    "query InstantClusters { gpuTypes(input: {cluster: true}) "
    "{ id displayName clusterPrice nodeGroupDatacenters { id name } } }"
)
# Documented fields of a lowestPrice answer (API_NOTES.md section 5); others are drift.
LOWEST_PRICE_FIELDS = frozenset(
    {
        "minimumBidPrice",
        "uninterruptablePrice",
        "minVcpu",
        "minMemory",
        "stockStatus",
        "compliance",
        "countryCode",
    }
)


class RunpodDataCenter(ProviderModel):
    id: str
    name: str = ""
    listed: bool = True


class RunpodGpuType(ProviderModel):
    id: str
    displayName: str = ""
    memoryInGb: int | None = None
    secureCloud: bool = False
    communityCloud: bool = False


class RunpodDiscovery(ProviderModel):
    countryCodes: list[str]
    dataCenters: list[RunpodDataCenter]
    gpuTypes: list[RunpodGpuType]


# GraphQL answers every field asked for (null where there is no value), so each field is
# required: a renamed or missing one is schema drift, never read as "not offered".
class RunpodLowestPrice(ProviderModel):
    minimumBidPrice: JsonNumber | None
    uninterruptablePrice: JsonNumber | None
    minVcpu: JsonNumber | None
    minMemory: JsonNumber | None
    stockStatus: str | None


class RunpodClusterGpu(ProviderModel):
    id: str
    clusterPrice: JsonNumber | None
    nodeGroupDatacenters: list[RunpodDataCenter]


def price_query(cloud: str, location: str) -> str:
    """One location's lowest prices for 2, 4 and 8 GPUs of every type, as GraphQL aliases."""
    where = f'dataCenterId: "{location}"' if cloud == SECURE else f'countryCode: "{location}"'
    secure = "true" if cloud == SECURE else "false"
    aliases = " ".join(
        f"n{count}: lowestPrice(input: {{gpuCount: {count}, secureCloud: {secure}, {where}}}) "
        f"{{ {PRICE_FIELDS} }}"
        for count in GPU_COUNTS
    )
    return f"query Prices {{ gpuTypes {{ id {aliases} }} }}"


def instance_slug_for(gpu_id: str, count: int, cloud: str) -> str | None:
    """The curated instance slug, the contract's rule for unnamed SKUs, or None for an unknown GPU."""
    gpu = GPU_SLUGS.get(gpu_id)
    if gpu is None:
        return None
    variant = "" if cloud == SECURE else f"-{cloud}"
    return INSTANCE_SLUGS.get((gpu, count, cloud)) or f"{count}x-{gpu}{variant}"


def geo_for(location: str, cloud: str) -> str:
    if cloud == COMMUNITY:
        return COUNTRY_GEO.get(location, "")
    prefix = location.split("-", 1)[0]
    return next((geo for p, geo in GEO_PREFIXES if prefix == p), "")


def sku_for(gpu_id: str, count: int, cloud: str) -> str:
    return f"{count}x {gpu_id} ({cloud})"


def _rejected(gpu_id: str, count: int, cloud: str, region: str, reason: str) -> list[RejectedRow]:
    slug = instance_slug_for(gpu_id, count, cloud)
    return [
        RejectedRow(
            sku=sku_for(gpu_id, count, cloud),
            reason=reason,
            instance_slug=slug,
            region=region,
            kind=kind,
        )
        for kind in ("on-demand", "spot")
    ]


def parse_lowest_price(
    gpu_id: str, count: int, cloud: str, location: str, region_name: str, raw: object
) -> list[ScrapedOffer] | list[RejectedRow]:
    """One `lowestPrice` answer -> an on-demand and a spot offer where priced, or rejected rows."""
    if raw is None:
        return []
    try:
        price = RunpodLowestPrice.model_validate(raw)
    except ValidationError as exc:
        return _rejected(gpu_id, count, cloud, location, describe_error(exc))
    per_gpu = {"on-demand": price.uninterruptablePrice, "spot": price.minimumBidPrice}
    parsed = {
        "gpu_type": gpu_id,
        "gpu": GPU_SLUGS.get(gpu_id),
        "gpu_count": count,
        "cloud": cloud,
        "stock_status": price.stockStatus,
        "min_vcpu_per_gpu": str(price.minVcpu) if price.minVcpu is not None else None,
        "min_memory_gb_per_gpu": str(price.minMemory) if price.minMemory is not None else None,
    }
    offers = []
    for kind, amount in per_gpu.items():
        if amount is None:
            continue  # not offered at this location (or no spot for this GPU)
        try:
            offers.append(
                ScrapedOffer(
                    sku=sku_for(gpu_id, count, cloud),
                    instance_slug=instance_slug_for(gpu_id, count, cloud),
                    region=location,
                    region_name=region_name,
                    geo=geo_for(location, cloud),
                    kind=kind,
                    price_per_hour=amount * count,
                    currency="USD",
                    available=price.stockStatus is not None,
                    source_url=SOURCE_URL,
                    parsed=parsed | {"price_per_gpu_hour": str(amount)},
                )
            )
        except ValidationError as exc:
            return _rejected(gpu_id, count, cloud, location, describe_error(exc))
    return offers


def parse_cluster_gpu(raw: object, names: dict[str, str]) -> list[ScrapedOffer] | list[RejectedRow]:
    """One GPU type of the Instant Cluster query -> an on-demand node offer per data center."""
    gpu_id = raw.get("id") if isinstance(raw, dict) else None
    gpu_id = gpu_id if isinstance(gpu_id, str) else ""
    try:
        gpu = RunpodClusterGpu.model_validate(raw)
    except ValidationError as exc:
        return [
            RejectedRow(sku=sku_for(gpu_id, CLUSTER_GPU_COUNT, CLUSTER), reason=describe_error(exc))
        ]
    if gpu.clusterPrice is None:
        return []
    offers = []
    for center in gpu.nodeGroupDatacenters:
        try:
            offers.append(
                ScrapedOffer(
                    sku=sku_for(gpu.id, CLUSTER_GPU_COUNT, CLUSTER),
                    instance_slug=instance_slug_for(gpu.id, CLUSTER_GPU_COUNT, CLUSTER),
                    region=center.id,
                    region_name=center.name or names.get(center.id, ""),
                    geo=geo_for(center.id, SECURE),
                    kind="on-demand",
                    price_per_hour=gpu.clusterPrice * CLUSTER_GPU_COUNT,
                    currency="USD",
                    source_url="https://www.runpod.io/pricing",
                    parsed={
                        "gpu_type": gpu.id,
                        "gpu": GPU_SLUGS.get(gpu.id),
                        "gpu_count": CLUSTER_GPU_COUNT,
                        "cloud": CLUSTER,
                        "price_per_gpu_hour": str(gpu.clusterPrice),
                    },
                )
            )
        except ValidationError as exc:
            slug = instance_slug_for(gpu.id, CLUSTER_GPU_COUNT, CLUSTER)
            return [
                RejectedRow(
                    sku=sku_for(gpu.id, CLUSTER_GPU_COUNT, CLUSTER),
                    reason=describe_error(exc),
                    instance_slug=slug,
                    region=c.id,
                    kind="on-demand",
                )
                for c in gpu.nodeGroupDatacenters
            ]
    return offers


def _post(client: httpx.Client, ctx: ScrapeContext, query: str, what: str) -> dict:
    """One GraphQL query; GraphQL errors (answered with HTTP 200) fail the run with their text."""
    response = client.post(API_URL, params={"api_key": ctx.api_key}, json={"query": query})
    data = read_json(response, what)
    if not isinstance(data, dict):
        raise ScrapeError(f"{what}: not a GraphQL answer")
    errors = data.get("errors")
    if errors:
        messages = [e.get("message", "?") if isinstance(e, dict) else str(e) for e in errors]
        raise ScrapeError(f"{what}: GraphQL error: {'; '.join(map(str, messages))[:300]}")
    body = data.get("data")
    if not isinstance(body, dict):
        raise ScrapeError(f"{what}: the answer has no 'data' object")
    return body


def _get_discovery(client: httpx.Client, ctx: ScrapeContext) -> RunpodDiscovery:
    # Reference: https://graphql-spec.runpod.io/#definition-Query
    body = _post(client, ctx, DISCOVERY_QUERY, "runpod discovery")
    try:
        return RunpodDiscovery.model_validate(body)
    except ValidationError as exc:
        raise ScrapeError(f"runpod discovery: {describe_error(exc)}") from None


def _get_prices(client: httpx.Client, ctx: ScrapeContext, cloud: str, location: str) -> list:
    # Reference: https://graphql-spec.runpod.io/#definition-GpuLowestPriceInput
    what = f"runpod {cloud} prices {location}"
    ctx.progress(what)
    types = _post(client, ctx, price_query(cloud, location), what).get("gpuTypes")
    if not isinstance(types, list):
        raise ScrapeError(f"{what}: the answer has no 'gpuTypes' list")
    return types


def _get_clusters(client: httpx.Client, ctx: ScrapeContext) -> list:
    # Reference: https://graphql-spec.runpod.io/#definition-GpuTypeFilter
    ctx.progress("runpod instant clusters")
    types = _post(client, ctx, CLUSTER_QUERY, "runpod instant clusters").get("gpuTypes")
    if not isinstance(types, list):
        raise ScrapeError("runpod instant clusters: the answer has no 'gpuTypes' list")
    return types


def _locations(discovery: RunpodDiscovery, ctx: ScrapeContext) -> list[tuple[str, str, str]]:
    """(cloud, location, name) to query: listed data centers, then country codes."""
    wanted = set(ctx.regions)
    centers = [(SECURE, c.id, c.name) for c in discovery.dataCenters if c.listed]
    countries = [(COMMUNITY, code, "") for code in discovery.countryCodes]
    return [loc for loc in centers + countries if not wanted or loc[1] in wanted]


def fetch(client: httpx.Client, ctx: ScrapeContext) -> ScrapeBatch:
    """Pods of 2, 4 and 8 GPUs in every location, and Instant Cluster nodes."""
    ctx.progress("runpod discovery")
    discovery = _get_discovery(client, ctx)
    names = {c.id: c.name for c in discovery.dataCenters}
    offers: list[ScrapedOffer] = []
    rejected: list[RejectedRow] = []

    def add(rows) -> None:
        for row in rows:
            (offers if isinstance(row, ScrapedOffer) else rejected).append(row)

    for cloud, location, name in _locations(discovery, ctx):
        for raw in _get_prices(client, ctx, cloud, location):
            gpu_id = raw.get("id") if isinstance(raw, dict) else None
            if not isinstance(gpu_id, str):
                rejected.append(
                    RejectedRow(region=location, reason=f"GPU type without an id: {raw!r:.80}")
                )
                continue
            for count in GPU_COUNTS:
                answer = raw.get(f"n{count}")
                if isinstance(answer, dict) and set(answer) - LOWEST_PRICE_FIELDS:
                    drift = sorted(set(answer) - LOWEST_PRICE_FIELDS)
                    ctx.warn(f"runpod: undocumented lowestPrice field(s) {drift}")
                add(parse_lowest_price(gpu_id, count, cloud, location, name, answer))
    for raw in _get_clusters(client, ctx):
        add(parse_cluster_gpu(raw, names))
    return ScrapeBatch(offers=tuple(offers), rejected=tuple(rejected), warnings=tuple(ctx.warnings))
