"""Vast.ai marketplace: rentable multi-GPU offers, grouped into instance-type buckets.

Needs VAST_API_KEY (Bearer); without it the provider is skipped. One search (`POST
/api/v0/bundles/`) returns every rentable, verified offer with at least 2 GPUs. Offers are
ephemeral (a host's listing lasts minutes to days and has its own id), so they are never
catalogued one by one: each offer falls in a bucket of GPU model, GPU count and NVLink bandwidth
(`bw_nvlink` in GB/s, rounded down to a band of 100; 0 = none reported), and each bucket yields
one offer per region (country, or US state) priced at the bucket's cheapest `dph_total` (the
whole offer per hour, disk included), with the median and the number of offers kept beside it.
Spot is the cheapest interruptible floor (`min_bid`). A bucket that maps to no curated instance
type reaches the review queue under its stable bucket name, never under an offer id.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

import httpx
from pydantic import ValidationError

from offerings.schemas import RejectedRow, ScrapeBatch, ScrapedOffer, instance_slug
from offerings.writer import MAX_GPU_HOUR_USD, MIN_GPU_HOUR_USD
from providers.base import (
    JsonNumber,
    ProviderModel,
    ScrapeContext,
    ScrapeError,
    describe_error,
    read_json,
)

SLUG = "vast"
API_URL = "https://console.vast.ai/api/v0/bundles/"
SOURCE_URL = "https://cloud.vast.ai/create/"
SEARCH_LIMIT = 3000
NVLINK_BAND_GBYTES = 100
SEARCH = {
    "num_gpus": {"gte": 2},
    "rentable": {"eq": True},
    "verified": {"eq": True},
    "order": [["dph_total", "asc"]],
    "limit": SEARCH_LIMIT,
}

# Vast gpu_name -> GPU slug. A100 and V100 depend on the memory (`gpu_ram`, MB per GPU, as
# reported: 40 GB cards report about 40960, 80 GB cards about 81920). An unlisted name keeps a
# slug made from the name itself, for the review queue.
GPU_SLUGS = {
    "H100 SXM": "h100-sxm",
    "H100 NVL": "h100-nvl",
    "H100 PCIE": "h100-pcie",
    "H200": "h200-sxm",
    "H200 NVL": "h200-nvl",
    "B200": "b200",
    "L40S": "l40s",
    "L40": "l40",
    "A40": "a40",
    "A10": "a10",
    "RTX 4090": "rtx-4090",
    "RTX 5090": "rtx-5090",
    "RTX 3090": "rtx-3090",
    "RTX 6000Ada": "rtx-6000-ada",
    "RTX A6000": "rtx-a6000",
    "RTX A5000": "rtx-a5000",
    "RTX A4000": "rtx-a4000",
}
BY_MEMORY = {
    "A100 SXM4": (("a100-sxm-40gb", 48_000), ("a100-sxm-80gb", None)),
    "A100 PCIE": (("a100-pcie-40gb", 48_000), ("a100-pcie-80gb", None)),
}

ANY_BAND = None  # the curated type does not state its NVLink: every band maps to it
NO_NVLINK = frozenset({0})

# (GPU slug, GPU count) -> (curated instance slug, NVLink bands it covers), from
# fixtures/providers/vast.toml. GPUs that have no NVLink at all (RTX 4090, L40S, RTX 6000 Ada)
# are curated as PCIe-only, so only band 0 maps: an offer reporting NVLink on them is odd and
# gets its own bucket in the review queue. The SXM/NVL/A6000 buckets are curated with the link
# unknown (a bucket cannot state a per-host property), so every band maps to them and the
# cheapest offer of any band prices them.
BUCKETS: dict[tuple[str, int], tuple[str, frozenset[int] | None]] = {
    ("rtx-4090", 8): ("8x-rtx-4090", NO_NVLINK),
    ("rtx-4090", 4): ("4x-rtx-4090", NO_NVLINK),
    ("l40s", 8): ("8x-l40s", NO_NVLINK),
    ("l40s", 4): ("4x-l40s", NO_NVLINK),
    ("rtx-6000-ada", 2): ("2x-rtx-6000-ada", NO_NVLINK),
    ("rtx-a6000", 2): ("2x-rtx-a6000", ANY_BAND),
    ("h100-sxm", 8): ("8x-h100-sxm", ANY_BAND),
    ("h200-sxm", 8): ("8x-h200-sxm", ANY_BAND),
    ("a100-sxm-40gb", 8): ("8x-a100-sxm-40gb", ANY_BAND),
    ("h100-nvl", 8): ("8x-h100-nvl", ANY_BAND),
}

# US states as Vast writes them in `geolocation` ("Utah, US") -> ISO 3166-2 subdivision codes,
# so a US offer's region is "US-UT"; outside the US the region is the country code.
US_STATES = {
    "Alabama": "AL", "Alaska": "AK", "Arizona": "AZ", "Arkansas": "AR", "California": "CA",
    "Colorado": "CO", "Connecticut": "CT", "Delaware": "DE", "Florida": "FL", "Georgia": "GA",
    "Hawaii": "HI", "Idaho": "ID", "Illinois": "IL", "Indiana": "IN", "Iowa": "IA",
    "Kansas": "KS", "Kentucky": "KY", "Louisiana": "LA", "Maine": "ME", "Maryland": "MD",
    "Massachusetts": "MA", "Michigan": "MI", "Minnesota": "MN", "Mississippi": "MS",
    "Missouri": "MO", "Montana": "MT", "Nebraska": "NE", "Nevada": "NV", "New Hampshire": "NH",
    "New Jersey": "NJ", "New Mexico": "NM", "New York": "NY", "North Carolina": "NC",
    "North Dakota": "ND", "Ohio": "OH", "Oklahoma": "OK", "Oregon": "OR", "Pennsylvania": "PA",
    "Rhode Island": "RI", "South Carolina": "SC", "South Dakota": "SD", "Tennessee": "TN",
    "Texas": "TX", "Utah": "UT", "Vermont": "VT", "Virginia": "VA", "Washington": "WA",
    "West Virginia": "WV", "Wisconsin": "WI", "Wyoming": "WY",
}  # fmt: skip
COUNTRY_GEO = {
    **dict.fromkeys(("US", "CA", "MX"), "na"),
    **dict.fromkeys(("BR", "AR", "CL", "CO"), "sa"),
    **dict.fromkeys(
        (
            "FR", "DE", "NL", "BE", "GB", "IE", "ES", "PT", "IT", "SI", "HR", "HU", "CZ", "SK",
            "PL", "RO", "BG", "GR", "EE", "LV", "LT", "FI", "SE", "NO", "DK", "IS", "AT", "CH",
            "RU", "UA", "RS",
        ),
        "eu",
    ),
    **dict.fromkeys(("IL", "AE", "SA", "TR", "QA"), "me"),
    **dict.fromkeys(("ZA", "NG", "KE", "EG"), "af"),
    **dict.fromkeys(
        ("CN", "HK", "TW", "JP", "KR", "SG", "TH", "VN", "IN", "MY", "ID", "PH"), "asia"
    ),
    **dict.fromkeys(("AU", "NZ"), "oc"),
}  # fmt: skip

# Offer fields Vast's search output is known to carry (API_NOTES.md section 6); others are drift.
OFFER_FIELDS = frozenset(
    [
        "id",
        "ask_contract_id",
        "bundle_id",
        "machine_id",
        "host_id",
        "gpu_name",
        "num_gpus",
        "gpu_ids",
        "gpu_frac",
        "gpu_ram",
        "gpu_total_ram",
        "gpu_mem_bw",
        "gpu_lanes",
        "pci_gen",
        "pcie_bw",
        "bw_nvlink",
        "compute_cap",
        "total_flops",
        "dlperf",
        "cpu_name",
        "cpu_arch",
        "cpu_cores",
        "cpu_cores_effective",
        "cpu_ghz",
        "cpu_ram",
        "disk_space",
        "disk_bw",
        "dph_base",
        "dph_total",
        "discounted_dph_total",
        "storage_cost",
        "min_bid",
        "is_bid",
        "inet_up",
        "inet_down",
        "inet_up_cost",
        "inet_down_cost",
        "geolocation",
        "geolocode",
        "hosting_type",
        "reliability",
        "reliability2",
        "verification",
        "vericode",
        "rentable",
        "rented",
        "direct_port_count",
        "static_ip",
        "public_ipaddr",
        "driver_version",
        "cuda_max_good",
        "os_version",
        "duration",
        "end_date",
        "search",
        "instance",
        "vms_enabled",
    ]
)


class VastOffer(ProviderModel):
    id: int
    gpu_name: str
    num_gpus: int
    gpu_ram: JsonNumber
    bw_nvlink: JsonNumber
    dph_total: JsonNumber
    min_bid: JsonNumber | None = None
    geolocation: str | None
    rentable: bool


@dataclass(frozen=True)
class Placed:
    """A valid offer with its bucket, target and region worked out."""

    offer: VastOffer
    gpu: str
    band: int
    bucket: str  # the stable bucket name: the SKU the review queue shows
    target: str | None  # the curated instance slug, or None
    region: str
    region_name: str
    geo: str


def gpu_slug_for(name: str, gpu_ram_mb: Decimal) -> str:
    if name in BY_MEMORY:
        return next(s for s, limit in BY_MEMORY[name] if limit is None or gpu_ram_mb < limit)
    return GPU_SLUGS.get(name) or instance_slug(name)


def nvlink_band(bw_nvlink: Decimal) -> int:
    """NVLink GB/s rounded down to a band of 100; 0 when none is reported (below 1 GB/s)."""
    if bw_nvlink < 1:
        return 0
    return int(bw_nvlink // NVLINK_BAND_GBYTES) * NVLINK_BAND_GBYTES


def bucket_name(count: int, gpu_name: str, band: int) -> str:
    link = f"NVLink {band}+ GB/s" if band else "no NVLink"
    return f"{count}x {gpu_name}, {link}"


def bucket_slug(gpu: str, count: int, band: int) -> str:
    """The contract's slug for an unnamed SKU: `<count>x-<gpu>[-nvlink-<band>]`."""
    return f"{count}x-{gpu}" + (f"-nvlink-{band}" if band else "")


def mapped_slug(gpu: str, count: int, band: int) -> str | None:
    """The curated instance slug of a bucket, when the table covers it and its band."""
    curated, bands = BUCKETS.get((gpu, count), (None, None))
    if curated is not None and (bands is ANY_BAND or band in bands):
        return curated
    return None


def region_for(geolocation: str | None) -> tuple[str, str, str] | None:
    """("US-UT", "Utah, US", "na") from "Utah, US"; ("FR", "France, FR", "eu"); None if unknown."""
    if not geolocation:
        return None
    place, _, country = geolocation.rpartition(",")
    country = country.strip().upper()
    place = place.strip()
    if len(country) != 2 or not country.isalpha():
        return None
    code = f"US-{US_STATES[place]}" if country == "US" and place in US_STATES else country
    return code, geolocation.strip().lstrip(", "), COUNTRY_GEO.get(country, "")


def parse_offer(raw: object) -> Placed | RejectedRow | None:
    """One search result -> a placed offer, a rejected row, or None (out of scope)."""
    offer_id = raw.get("id") if isinstance(raw, dict) else None
    where = f"offer {offer_id}"
    try:
        offer = VastOffer.model_validate(raw)
    except ValidationError as exc:
        return RejectedRow(sku=where, reason=describe_error(exc))
    if offer.num_gpus < 2 or not offer.rentable:
        return None
    located = region_for(offer.geolocation)
    if located is None:
        return RejectedRow(sku=where, reason=f"unreadable geolocation {offer.geolocation!r}")
    gpu = gpu_slug_for(offer.gpu_name, offer.gpu_ram)
    band = nvlink_band(offer.bw_nvlink)
    per_gpu = offer.dph_total / offer.num_gpus
    if not MIN_GPU_HOUR_USD <= per_gpu <= MAX_GPU_HOUR_USD:
        # One bogus listing must not become its bucket's cheapest price.
        return RejectedRow(
            sku=where,
            reason=f"implausible offer price: dph_total {offer.dph_total} for {offer.num_gpus} "
            f"GPUs is outside {MIN_GPU_HOUR_USD}-{MAX_GPU_HOUR_USD} USD per GPU-hour",
            instance_slug=mapped_slug(gpu, offer.num_gpus, band)
            or bucket_slug(gpu, offer.num_gpus, band),
            region=located[0],
            kind="on-demand",
        )
    return Placed(
        offer=offer,
        gpu=gpu,
        band=band,
        bucket=bucket_name(offer.num_gpus, offer.gpu_name, band),
        target=mapped_slug(gpu, offer.num_gpus, band),
        region=located[0],
        region_name=located[1],
        geo=located[2],
    )


def summarize(group: list[Placed]) -> list[ScrapedOffer]:
    """One bucket in one region -> its on-demand offer and, where bids exist, its spot offer."""
    first = group[0]
    count = first.offer.num_gpus
    target = first.target
    sku = f"{count}x {first.offer.gpu_name}" if target else first.bucket
    prices = {
        "on-demand": sorted(p.offer.dph_total for p in group),
        "spot": sorted(p.offer.min_bid for p in group if p.offer.min_bid),
    }
    offers = []
    for kind, amounts in prices.items():
        if not amounts:
            continue
        parsed = {
            "gpu": first.gpu,
            "gpu_name": first.offer.gpu_name,
            "gpu_count": count,
            "nvlink_bands_gbytes_per_s": sorted({p.band for p in group}),
            "offers": len(amounts),
            "cheapest": str(amounts[0]),
            "median": str(statistics.median(amounts)),
            "offer_ids": sorted(p.offer.id for p in group)[:20],
        }
        offers.append(
            ScrapedOffer(
                sku=sku,
                instance_slug=target or bucket_slug(first.gpu, count, first.band),
                region=first.region,
                region_name=first.region_name,
                geo=first.geo,
                kind=kind,
                price_per_hour=amounts[0],
                currency="USD",
                available=True,
                source_url=SOURCE_URL,
                parsed=parsed,
            )
        )
    return offers


def _get_offers(client: httpx.Client, ctx: ScrapeContext) -> list:
    # Reference: https://docs.vast.ai/api-reference/search/search-offers
    ctx.progress("vast: offers")
    response = client.post(API_URL, json=SEARCH, headers={"Authorization": f"Bearer {ctx.api_key}"})
    data = read_json(response, "vast offers")
    offers = data.get("offers") if isinstance(data, dict) else None
    if not isinstance(offers, list):
        raise ScrapeError("vast offers: the answer has no 'offers' list")
    if len(offers) >= SEARCH_LIMIT:
        ctx.warn(f"vast: the search returned its limit of {SEARCH_LIMIT} offers; some were cut")
    return offers


def fetch(client: httpx.Client, ctx: ScrapeContext) -> ScrapeBatch:
    """Every bucket of rentable multi-GPU offers, per region, cheapest first."""
    groups: dict[tuple[str, str], list[Placed]] = defaultdict(list)
    rejected: list[RejectedRow] = []
    seen: dict[int, Placed] = {}
    twice: set[int] = set()
    for raw in _get_offers(client, ctx):
        if isinstance(raw, dict) and set(raw) - OFFER_FIELDS:
            ctx.warn(f"vast: undocumented offer field(s) {sorted(set(raw) - OFFER_FIELDS)}")
        result = parse_offer(raw)
        if isinstance(result, RejectedRow):
            rejected.append(result)
        elif result is not None:
            if result.offer.id in seen:
                twice.add(result.offer.id)
                if seen[result.offer.id].offer != result.offer:
                    reason = "offer listed twice with different values; both copies ignored"
                else:
                    reason = "duplicate of an earlier listing of the same offer; ignored"
                rejected.append(RejectedRow(sku=f"offer {result.offer.id}", reason=reason))
                continue
            seen[result.offer.id] = result
    for offer_id, placed in seen.items():
        conflicting = offer_id in twice and any(
            r.reason.startswith("offer listed twice") and r.sku == f"offer {offer_id}"
            for r in rejected
        )
        if not conflicting:
            groups[(placed.target or placed.bucket, placed.region)].append(placed)
    offers = [offer for group in groups.values() for offer in summarize(group)]
    return ScrapeBatch(offers=tuple(offers), rejected=tuple(rejected), warnings=tuple(ctx.warnings))
