"""Azure Retail Prices API: on-demand, spot and reserved prices of GPU virtual machines.

No key. One OData `$filter` query per region (paging is not snapshot-consistent across
regions), following `NextPageLink`, with a `$skip` fallback when a full page comes back without
one (the API has been seen to drop it). Linux only: Windows, Low Priority and Dev/Test meters are
skipped. Spot is a Consumption meter with "Spot" in meterName/skuName. A Reservation price is the
total for the whole term and becomes hourly as total / (730 x months).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from urllib.parse import urlencode, urlsplit

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
    spot_at_or_above_on_demand,
)
from providers.exchanges import match_key

SLUG = "azure"
API_URL = "https://prices.azure.com/api/retail/prices"
DEFAULT_REGIONS = ("eastus", "eastus2", "southcentralus", "westus", "westus2", "westus3")
# GPU sizes are the N-family (NC, ND, NG, NV); every size name starts with "Standard_N".
REGION_FILTER = (
    "serviceName eq 'Virtual Machines' and armRegionName eq '{region}' "
    "and contains(armSkuName, 'Standard_N')"
)
# A page shorter than this is the last one even without NextPageLink (pages hold 100 or 1000).
FULL_PAGE = 100
MAX_PAGES_PER_REGION = 200
HOURS_PER_MONTH = Decimal(730)
RESERVATION_MONTHS = {"1 Year": 12, "3 Years": 36, "5 Years": 60}

# Price-list SKU name -> curated instance slug (fixtures/providers/azure.toml). A name not
# listed maps by the contract's slug rule (Standard_ND96isr_H100_v5 -> standard-nd96isr-h100-v5);
# when no curated type has that slug the SKU goes to the review queue, never guessed further.
INSTANCE_SLUGS = {
    "Standard_ND96isr_H100_v5": "standard-nd96isr-h100-v5",
    "Standard_ND96amsr_A100_v4": "standard-nd96amsr-a100-v4",
    # The price list names the ND A100 v4 size Standard_ND96asr_v4 (docs: ..._A100_v4).
    "Standard_ND96asr_v4": "standard-nd96asr-a100-v4",
    "Standard_ND96asr_A100_v4": "standard-nd96asr-a100-v4",
    "Standard_ND96isr_MI300X_v5": "standard-nd96isr-mi300x-v5",
    "Standard_NC48ads_A100_v4": "standard-nc48ads-a100-v4",
    "Standard_NC96ads_A100_v4": "standard-nc96ads-a100-v4",
    "Standard_NC80adis_H100_v5": "standard-nc80adis-h100-v5",
    "Standard_ND40rs_v2": "standard-nd40rs-v2",
}


def mapped_slug(sku: str) -> str:
    """The curated instance slug a price-list SKU name stands for."""
    return INSTANCE_SLUGS.get(sku) or instance_slug(sku)


# Size-name pattern -> GPU slug, for what the review queue shows (API_NOTES: the price API has
# no GPU fields; model and memory come from the size name). First match wins.
GPU_PATTERNS = (
    (re.compile(r"^Standard_ND\d+is?r_H200_v5$"), "h200-sxm"),
    (re.compile(r"^Standard_ND\d+is?r_H100_v5$"), "h100-sxm"),
    (re.compile(r"^Standard_NC\d+adi?s_H100_v5$"), "h100-nvl"),
    (re.compile(r"^Standard_NCC\d+adi?s_H100_v5$"), "h100-nvl"),
    (re.compile(r"^Standard_ND\d+amsr_A100_v4$"), "a100-sxm-80gb"),
    (re.compile(r"^Standard_ND\d+asr(_A100)?_v4$"), "a100-sxm-40gb"),
    (re.compile(r"^Standard_NC\d+ads_A100_v4$"), "a100-pcie-80gb"),
    (re.compile(r"^Standard_ND\d+is?r_MI300X_v5$"), "mi300x"),
    (re.compile(r"^Standard_ND\d+is?r_GB200_v6$"), "gb200"),
    (re.compile(r"^Standard_N[CV]\d+ad[m]?s_A10_v[45]$"), "a10"),
    (re.compile(r"^Standard_ND\d+rs_v2$"), "v100-sxm2-32gb"),
)

REGION_GEO = {
    "eastus": "na",
    "eastus2": "na",
    "centralus": "na",
    "northcentralus": "na",
    "southcentralus": "na",
    "westcentralus": "na",
    "westus": "na",
    "westus2": "na",
    "westus3": "na",
    "canadacentral": "na",
    "canadaeast": "na",
    "brazilsouth": "sa",
    "northeurope": "eu",
    "westeurope": "eu",
    "swedencentral": "eu",
    "uksouth": "eu",
    "ukwest": "eu",
    "francecentral": "eu",
    "germanywestcentral": "eu",
    "norwayeast": "eu",
    "switzerlandnorth": "eu",
    "polandcentral": "eu",
    "italynorth": "eu",
    "uaenorth": "me",
    "qatarcentral": "me",
    "israelcentral": "me",
    "southafricanorth": "af",
    "japaneast": "asia",
    "japanwest": "asia",
    "koreacentral": "asia",
    "southeastasia": "asia",
    "eastasia": "asia",
    "centralindia": "asia",
    "southindia": "asia",
    "australiaeast": "oc",
    "australiasoutheast": "oc",
}

# Every item field the API documents; anything else is schema drift worth a warning.
DOCUMENTED_FIELDS = frozenset(
    {
        "currencyCode",
        "tierMinimumUnits",
        "retailPrice",
        "unitPrice",
        "armRegionName",
        "location",
        "effectiveStartDate",
        "effectiveEndDate",
        "meterId",
        "meterName",
        "productId",
        "skuId",
        "availabilityId",
        "productName",
        "skuName",
        "serviceName",
        "serviceId",
        "serviceFamily",
        "unitOfMeasure",
        "type",
        "isPrimaryMeterRegion",
        "armSkuName",
        "reservationTerm",
        "savingsPlan",
    }
)


class AzurePriceItem(ProviderModel):
    """One item of a Retail Prices page: only the fields read."""

    currencyCode: str
    retailPrice: JsonNumber
    armRegionName: str
    location: str = ""
    meterName: str
    productName: str
    skuName: str
    serviceName: str
    unitOfMeasure: str
    type: str
    armSkuName: str
    reservationTerm: str | None = None


class AzurePricePage(ProviderModel):
    Items: list[dict]
    NextPageLink: str | None = None


def gpu_slug_for(sku: str) -> str | None:
    """The GPU slug a size name states, where a pattern knows it."""
    for pattern, slug in GPU_PATTERNS:
        if pattern.match(sku):
            return slug
    return None


def source_url_for(region: str, sku: str) -> str:
    """A URL that shows exactly this SKU's prices in this region."""
    query = f"armRegionName eq '{region}' and armSkuName eq '{sku}'"
    return f"{API_URL}?{urlencode({'$filter': query})}"


def next_page_url(link: str, region: str) -> str:
    """NextPageLink, only where it stays on the Retail Prices API: a scraped URL is untrusted."""
    parts = urlsplit(link)
    api = urlsplit(API_URL)
    if (parts.scheme, parts.hostname, parts.path) != (api.scheme, api.hostname, api.path):
        raise ScrapeError(f"azure {region}: NextPageLink {link[:120]!r} leaves {API_URL}")
    return link


def _kind_of(meter_name: str, sku_name: str, price_type: str, term: str | None):
    """(kind, term months) of an item, or a reason it is not a price we keep."""
    if price_type == "Consumption":
        spot = "Spot" in meter_name or "Spot" in sku_name
        return ("spot" if spot else "on-demand", 0)
    if price_type == "Reservation":
        months = RESERVATION_MONTHS.get(term or "")
        if months is None:
            return f"unknown reservationTerm {term!r}"
        return ("reserved", months)
    return f"unknown price type {price_type!r}"


def _is_skipped(raw: dict) -> bool:
    """Windows, Low Priority and Dev/Test meters are not the Linux list prices we keep."""
    text = {name: raw.get(name) for name in ("productName", "meterName", "skuName", "type")}
    text = {k: v if isinstance(v, str) else "" for k, v in text.items()}
    return (
        "Windows" in text["productName"]
        or "Low Priority" in text["meterName"]
        or "Low Priority" in text["skuName"]
        or text["type"] == "DevTestConsumption"
    )


def _guess_rejected(raw: dict, region: str, reason: str) -> RejectedRow:
    """A rejected row carrying as much of its offer's key as the raw item states."""
    sku = raw.get("armSkuName") if isinstance(raw.get("armSkuName"), str) else ""
    kind = _kind_of(
        str(raw.get("meterName", "")),
        str(raw.get("skuName", "")),
        str(raw.get("type", "")),
        raw.get("reservationTerm") if isinstance(raw.get("reservationTerm"), str) else None,
    )
    kind, term = kind if isinstance(kind, tuple) else ("", 0)
    item_region = raw.get("armRegionName")
    return RejectedRow(
        sku=sku or str(raw.get("skuName", ""))[:200],
        reason=reason,
        instance_slug=mapped_slug(sku) if sku else None,
        region=item_region if isinstance(item_region, str) and item_region else region,
        kind=kind,
        term_months=term,
    )


def parse_item(raw: dict, region: str) -> ScrapedOffer | RejectedRow | None:
    """One Retail Prices item -> a scraped offer, a rejected row, or None when skipped."""
    if not isinstance(raw, dict):
        return RejectedRow(region=region, reason=f"item is not an object: {raw!r:.80}")
    if _is_skipped(raw):
        return None
    try:
        item = AzurePriceItem.model_validate(raw)
    except ValidationError as exc:
        return _guess_rejected(raw, region, describe_error(exc))
    if item.serviceName != "Virtual Machines":
        return None
    if not item.armSkuName:
        return _guess_rejected(raw, region, "armSkuName is empty")
    kind = _kind_of(item.meterName, item.skuName, item.type, item.reservationTerm)
    if isinstance(kind, str):
        return _guess_rejected(raw, region, kind)
    kind, months = kind
    price = item.retailPrice
    if kind == "reserved":
        price = price / (HOURS_PER_MONTH * months)
    elif item.unitOfMeasure != "1 Hour":
        return _guess_rejected(raw, region, f"unexpected unitOfMeasure {item.unitOfMeasure!r}")
    try:
        return ScrapedOffer(
            sku=item.armSkuName,
            instance_slug=mapped_slug(item.armSkuName),
            region=item.armRegionName,
            region_name=item.location,
            geo=REGION_GEO.get(item.armRegionName, ""),
            kind=kind,
            term_months=months,
            price_per_hour=price,
            currency=item.currencyCode,
            source_url=source_url_for(item.armRegionName, item.armSkuName),
            parsed={
                "armSkuName": item.armSkuName,
                "skuName": item.skuName,
                "productName": item.productName,
                "gpu": gpu_slug_for(item.armSkuName),
            },
        )
    except ValidationError as exc:
        return _guess_rejected(raw, region, describe_error(exc))


def _get_items(client: httpx.Client, region: str, ctx: ScrapeContext) -> Iterator[dict]:
    """Every item of one region's query, page by page."""
    # Reference: https://learn.microsoft.com/en-us/rest/api/cost-management/retail-prices/azure-retail-prices
    query = {"$filter": REGION_FILTER.format(region=region)}
    url, params = API_URL, query
    fetched: set[tuple] = set()
    seen = 0
    for page_number in range(1, MAX_PAGES_PER_REGION + 1):
        request = client.build_request("GET", url, params=params)
        identity = match_key("GET", str(request.url))
        if identity in fetched:
            raise ScrapeError(f"azure {region}: paging loop, {request.url} was already fetched")
        fetched.add(identity)
        ctx.progress(f"azure {region} page {page_number}")
        data = read_json(client.send(request), f"azure {region} page {page_number}")
        if not isinstance(data, dict):
            raise ScrapeError(f"azure {region} page {page_number}: not a Retail Prices page")
        try:
            page = AzurePricePage.model_validate(data)
        except ValidationError as exc:
            raise ScrapeError(
                f"azure {region} page {page_number}: not a Retail Prices page "
                f"({describe_error(exc)})"
            ) from None
        yield from page.Items
        seen += len(page.Items)
        if page.NextPageLink:
            url, params = next_page_url(page.NextPageLink, region), None
        elif len(page.Items) >= FULL_PAGE:
            # NextPageLink has been seen missing on full pages: step $skip ourselves.
            url, params = API_URL, {**query, "$skip": str(seen)}
        else:
            return
    raise ScrapeError(f"azure {region}: more than {MAX_PAGES_PER_REGION} pages, giving up")


def fetch(client: httpx.Client, ctx: ScrapeContext) -> ScrapeBatch:
    """Every GPU VM price in the configured regions."""
    offers: list[ScrapedOffer] = []
    rejected: list[RejectedRow] = []
    for region in ctx.regions or DEFAULT_REGIONS:
        for raw in _get_items(client, region, ctx):
            if isinstance(raw, dict):
                drift = set(raw) - DOCUMENTED_FIELDS
                if drift:
                    ctx.warn(f"azure: undocumented item field(s) {sorted(drift)}")
            result = parse_item(raw, region)
            if isinstance(result, ScrapedOffer):
                offers.append(result)
            elif isinstance(result, RejectedRow):
                rejected.append(result)
    offers, defects = spot_at_or_above_on_demand(offers)
    return ScrapeBatch(
        offers=tuple(offers), rejected=(*rejected, *defects), warnings=tuple(ctx.warnings)
    )
