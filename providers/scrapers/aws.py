"""AWS EC2 Price List bulk offer files: on-demand and reserved prices of GPU instance types.

No key. The region index names each region's current offer file; each file (hundreds of MB
for a large region) is streamed through ijson and never held in memory: only the products that
are Linux, shared-tenancy, no pre-installed software, "Used" capacity, and either mapped or with
two or more GPUs are kept, and only their terms are built. Capacity Block products (a
`marketoption` of CapacityBlock) are told apart and skipped: they are not on-demand prices.
Reserved: one price per term, the standard offering class, preferring All Upfront, then Partial,
then No Upfront; the effective hourly price is (upfront fee + hourly x 730 x months) / (730 x
months), so a term total becomes hourly as the contract says.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import httpx
import ijson
from pydantic import ValidationError

from offerings.schemas import RejectedRow, ScrapeBatch, ScrapedOffer, instance_slug
from providers.base import (
    DecimalString,
    ProviderModel,
    ScrapeContext,
    ScrapeError,
    describe_error,
    read_json,
    snippet,
)

SLUG = "aws"
BASE_URL = "https://pricing.us-east-1.amazonaws.com"
REGION_INDEX_URL = f"{BASE_URL}/offers/v1.0/aws/AmazonEC2/current/region_index.json"
DEFAULT_REGIONS = ("us-east-1", "us-east-2", "us-west-2")
HOURS_PER_MONTH = Decimal(730)
LEASE_MONTHS = {"1yr": 12, "3yr": 36}
PURCHASE_PREFERENCE = ("All Upfront", "Partial Upfront", "No Upfront")
PROGRESS_EVERY_BYTES = 8 * 1024 * 1024
CHUNK_BYTES = 256 * 1024

# Offer-file instanceType -> curated instance slug (fixtures/providers/aws.toml). A type not
# listed maps by the contract's slug rule (p5.48xlarge -> p5-48xlarge); when no curated type has
# that slug it goes to the review queue.
INSTANCE_SLUGS = {
    "p3dn.24xlarge": "p3dn-24xlarge",
    "p4d.24xlarge": "p4d-24xlarge",
    "p4de.24xlarge": "p4de-24xlarge",
    "p5.48xlarge": "p5-48xlarge",
    "p5e.48xlarge": "p5e-48xlarge",
    "p5en.48xlarge": "p5en-48xlarge",
    "p6-b200.48xlarge": "p6-b200-48xlarge",
    "g5.48xlarge": "g5-48xlarge",
    "g6.48xlarge": "g6-48xlarge",
    "g6e.12xlarge": "g6e-12xlarge",
    "g6e.48xlarge": "g6e-48xlarge",
}


def mapped_slug(instance_type: str) -> str:
    """The curated instance slug an offer-file instance type stands for."""
    return INSTANCE_SLUGS.get(instance_type) or instance_slug(instance_type)


# Instance family -> GPU slug (the offer file has GPU counts, not models), for the review queue.
GPU_BY_FAMILY = {
    "p3": "v100-sxm2-16gb",
    "p3dn": "v100-sxm2-32gb",
    "p4d": "a100-sxm-40gb",
    "p4de": "a100-sxm-80gb",
    "p5": "h100-sxm",
    "p5e": "h200-sxm",
    "p5en": "h200-sxm",
    "p6-b200": "b200",
    "p6e-gb200": "gb200",
    "g4dn": "t4",
    "g5": "a10g",
    "g6": "l4",
    "g6e": "l40s",
}

REGION_GEO_PREFIXES = (
    ("us-", "na"),
    ("ca-", "na"),
    ("mx-", "na"),
    ("sa-", "sa"),
    ("eu-", "eu"),
    ("me-", "me"),
    ("il-", "me"),
    ("af-", "af"),
    ("ap-southeast-2", "oc"),
    ("ap-southeast-4", "oc"),
    ("ap-", "asia"),
    ("cn-", "asia"),
)

WANTED = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
}
COMPUTE_FAMILIES = ("Compute Instance", "Compute Instance (bare metal)")
# Documented keys of a product, a term and a price dimension; others are schema drift.
PRODUCT_KEYS = frozenset({"sku", "productFamily", "attributes"})
TERM_KEYS = frozenset(
    {"offerTermCode", "sku", "effectiveDate", "priceDimensions", "termAttributes"}
)
DIMENSION_KEYS = frozenset(
    {"rateCode", "description", "beginRange", "endRange", "unit", "pricePerUnit", "appliesTo"}
)


class AwsProduct(ProviderModel):
    sku: str
    productFamily: str
    attributes: dict[str, str]


class AwsPriceDimension(ProviderModel):
    unit: str
    pricePerUnit: dict[str, DecimalString]


class AwsTerm(ProviderModel):
    priceDimensions: dict[str, AwsPriceDimension]
    termAttributes: dict[str, str] = {}


class AwsRegion(ProviderModel):
    regionCode: str
    currentVersionUrl: str


def gpu_slug_for(instance_type: str) -> str | None:
    return GPU_BY_FAMILY.get(instance_type.split(".", 1)[0])


def geo_for(region: str) -> str:
    for prefix, geo in REGION_GEO_PREFIXES:
        if region.startswith(prefix):
            return geo
    return ""


class _ByteReader:
    """A file-like view of a response's byte chunks, for ijson, reporting progress."""

    def __init__(self, chunks: Iterator[bytes], progress) -> None:
        self._chunks = chunks
        self._buffer = b""
        self._progress = progress
        self.bytes_read = 0
        self._next_report = PROGRESS_EVERY_BYTES

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._buffer += chunk
        if size < 0:
            data, self._buffer = self._buffer, b""
        else:
            data, self._buffer = self._buffer[:size], self._buffer[size:]
        self.bytes_read += len(data)
        if self.bytes_read >= self._next_report:
            self._progress(self.bytes_read)
            self._next_report += PROGRESS_EVERY_BYTES
        return data


def _build(events: Iterator[tuple[str, str, Any]]) -> Any:
    """Build the JSON value whose events come next (after a map_key) and return it."""
    builder = ijson.ObjectBuilder()
    depth = 0
    for _prefix, event, value in events:
        builder.event(event, value)
        if event in ("start_map", "start_array"):
            depth += 1
        elif event in ("end_map", "end_array"):
            depth -= 1
        if depth == 0:
            return builder.value
    raise ScrapeError("offer file ended inside a value")


def _skip(events: Iterator[tuple[str, str, Any]]) -> None:
    depth = 0
    for _prefix, event, _value in events:
        if event in ("start_map", "start_array"):
            depth += 1
        elif event in ("end_map", "end_array"):
            depth -= 1
        if depth == 0:
            return


class _RegionParse:
    """What one region's offer file yields, collected while it streams by."""

    def __init__(self, region: str, source_url: str, ctx: ScrapeContext) -> None:
        self.region = region
        self.source_url = source_url
        self.ctx = ctx
        self.products: dict[str, dict] = {}
        self.capacity_blocks: set[str] = set()
        self.offers: list[ScrapedOffer] = []
        self.rejected: list[RejectedRow] = []

    def _drift(self, what: str, raw: Any, known: frozenset[str]) -> None:
        if isinstance(raw, dict) and set(raw) - known:
            self.ctx.warn(f"aws: undocumented {what} field(s) {sorted(set(raw) - known)}")

    def _term_drift(self, raw: Any) -> None:
        for term in raw.values() if isinstance(raw, dict) else ():
            self._drift("term", term, TERM_KEYS)
            dimensions = term.get("priceDimensions") if isinstance(term, dict) else None
            for dimension in dimensions.values() if isinstance(dimensions, dict) else ():
                self._drift("price dimension", dimension, DIMENSION_KEYS)

    def product(self, sku: str, raw: Any) -> None:
        attrs = raw.get("attributes") if isinstance(raw, dict) else None
        if isinstance(attrs, dict):
            name, gpus = attrs.get("instanceType"), attrs.get("gpu")
            multi_gpu = (
                isinstance(gpus, str) and gpus.isascii() and gpus.isdigit() and int(gpus) >= 2
            )
            if isinstance(name, str) and name not in INSTANCE_SLUGS and not multi_gpu:
                return  # the common case, skipped before validation: not a multi-GPU type
        self._drift("product", raw, PRODUCT_KEYS)
        try:
            product = AwsProduct.model_validate(raw)
        except ValidationError as exc:
            attrs = raw.get("attributes") if isinstance(raw, dict) else None
            name = attrs.get("instanceType") if isinstance(attrs, dict) else None
            name = name if isinstance(name, str) else ""
            self.rejected.append(
                RejectedRow(
                    sku=name or sku,
                    reason=f"product {sku}: {describe_error(exc)}",
                    instance_slug=mapped_slug(name) if name else None,
                    region=self.region,
                    kind="on-demand" if name else "",
                )
            )
            return
        attrs = product.attributes
        if product.productFamily not in COMPUTE_FAMILIES:
            return
        if any(attrs.get(name) != value for name, value in WANTED.items()):
            return
        name = attrs.get("instanceType", "")
        if not name:
            self.rejected.append(
                RejectedRow(sku=product.sku, reason=f"product {sku} has no instanceType")
            )
            return
        gpus = attrs.get("gpu", "0")
        gpu_count = int(gpus) if gpus.isascii() and gpus.isdigit() else 0
        if name not in INSTANCE_SLUGS and gpu_count < 2:
            return  # not a multi-GPU instance type: out of the catalog's scope
        market = attrs.get("marketoption", "OnDemand")
        if market == "CapacityBlock" or "CapacityBlock" in attrs.get("usagetype", ""):
            self.capacity_blocks.add(name)
            return
        self.products[product.sku] = {
            "instanceType": name,
            "gpu_count": gpu_count,
            "vcpu": attrs.get("vcpu"),
            "memory": attrs.get("memory"),
            "gpuMemory": attrs.get("gpuMemory"),
            "location": attrs.get("location", ""),
            "gpu": gpu_slug_for(name),
        }

    def _offer(self, info: dict, kind: str, months: int, price: Decimal, currency: str):
        name = info["instanceType"]
        try:
            self.offers.append(
                ScrapedOffer(
                    sku=name,
                    instance_slug=mapped_slug(name),
                    region=self.region,
                    region_name=info["location"],
                    geo=geo_for(self.region),
                    kind=kind,
                    term_months=months,
                    price_per_hour=price,
                    currency=currency,
                    source_url=self.source_url,
                    parsed={k: v for k, v in info.items() if k != "location"},
                )
            )
        except ValidationError as exc:
            self._reject(info, kind, months, describe_error(exc))

    def _reject(self, info: dict, kind: str, months: int, reason: str) -> None:
        name = info["instanceType"]
        self.rejected.append(
            RejectedRow(
                sku=name,
                reason=reason,
                instance_slug=mapped_slug(name),
                region=self.region,
                kind=kind,
                term_months=months,
            )
        )

    def on_demand(self, sku: str, raw: Any) -> None:
        info = self.products[sku]
        self._term_drift(raw)
        try:
            terms = [AwsTerm.model_validate(t) for t in (raw or {}).values()]
        except (ValidationError, AttributeError) as exc:
            reason = describe_error(exc) if isinstance(exc, ValidationError) else str(exc)
            self._reject(info, "on-demand", 0, f"OnDemand terms of {sku}: {reason}")
            return
        prices = {
            (currency, amount)
            for term in terms
            for dimension in term.priceDimensions.values()
            if dimension.unit == "Hrs"
            for currency, amount in dimension.pricePerUnit.items()
        }
        if len(prices) != 1:
            found = ", ".join(f"{a} {c}" for c, a in sorted(prices)) or "none"
            self._reject(
                info, "on-demand", 0, f"expected one hourly price for {sku}, found {found}"
            )
            return
        currency, amount = prices.pop()
        self._offer(info, "on-demand", 0, amount, currency)

    def reserved(self, sku: str, raw: Any) -> None:
        info = self.products[sku]
        self._term_drift(raw)
        best: dict[int, tuple[int, Decimal, str]] = {}
        try:
            terms = [AwsTerm.model_validate(t) for t in (raw or {}).values()]
        except (ValidationError, AttributeError) as exc:
            reason = describe_error(exc) if isinstance(exc, ValidationError) else str(exc)
            self._reject(info, "reserved", 0, f"Reserved terms of {sku}: {reason}")
            return
        for term in terms:
            hourly = reserved_hourly(term)
            if hourly is None:
                continue
            months, rank, price, currency = hourly
            if months not in best or rank < best[months][0]:
                best[months] = (rank, price, currency)
        for months, (_rank, price, currency) in sorted(best.items()):
            self._offer(info, "reserved", months, price, currency)


def reserved_hourly(term: AwsTerm) -> tuple[int, int, Decimal, str] | None:
    """(months, preference rank, effective hourly price, currency) of a standard reserved term."""
    attrs = term.termAttributes
    months = LEASE_MONTHS.get(attrs.get("LeaseContractLength", "").replace(" ", ""))
    option = attrs.get("PurchaseOption", "")
    if months is None or attrs.get("OfferingClass") != "standard":
        return None
    if option not in PURCHASE_PREFERENCE:
        return None
    upfront, hourly, currencies = Decimal(0), Decimal(0), set()
    for dimension in term.priceDimensions.values():
        for currency, amount in dimension.pricePerUnit.items():
            currencies.add(currency)
            if dimension.unit == "Quantity":
                upfront += amount
            elif dimension.unit == "Hrs":
                hourly += amount
    if len(currencies) != 1:
        return None
    hours = HOURS_PER_MONTH * months
    price = (upfront + hourly * hours) / hours
    return months, PURCHASE_PREFERENCE.index(option), price, currencies.pop()


def parse_offer_file(events: Iterator[tuple[str, str, Any]], parse: _RegionParse) -> None:
    """Walk one offer file's events: products first, then the terms of the products kept."""
    saw_products = False
    for prefix, event, value in events:
        if event != "map_key":
            continue
        if prefix == "" and value == "terms" and not saw_products:
            raise ScrapeError(f"aws {parse.region}: offer file lists terms before products")
        if prefix == "" and value == "products":
            saw_products = True
        elif prefix == "products":
            parse.product(value, _build(events))
        elif prefix in ("terms.OnDemand", "terms.Reserved"):
            if value in parse.products:
                handler = parse.on_demand if prefix.endswith("OnDemand") else parse.reserved
                handler(value, _build(events))
            else:
                _skip(events)
    if not saw_products:
        raise ScrapeError(f"aws {parse.region}: offer file has no products")


def offer_file_url(path: str) -> str:
    """currentVersionUrl on the price-list host; a path that would leave it is refused."""
    url = BASE_URL + path
    if not path.startswith("/") or urlsplit(url).hostname != urlsplit(BASE_URL).hostname:
        raise ScrapeError(f"aws: currentVersionUrl {path[:120]!r} leaves {BASE_URL}")
    return url


def _get_region_index(client: httpx.Client) -> dict[str, AwsRegion]:
    # Reference: https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-the-aws-price-list-bulk-api-fetching-price-list-files-manually.html
    data = read_json(client.get(REGION_INDEX_URL), "aws region index")
    regions = data.get("regions") if isinstance(data, dict) else None
    if not isinstance(regions, dict):
        raise ScrapeError(f"aws region index: no 'regions' object in {REGION_INDEX_URL}")
    index = {}
    for code, raw in regions.items():
        try:
            index[code] = AwsRegion.model_validate(raw)
        except ValidationError as exc:
            raise ScrapeError(f"aws region index: region {code}: {describe_error(exc)}") from None
    return index


def _get_offer_file(client: httpx.Client, url: str, parse: _RegionParse) -> None:
    # Reference: https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/reading-an-offer.html
    with client.stream("GET", url) as response:
        if response.is_error:
            response.read()
            raise ScrapeError(
                f"aws {parse.region}: HTTP {response.status_code} {response.reason_phrase} "
                f"from {url}: {snippet(response.content)}"
            )
        content_type = response.headers.get("Content-Type", "")
        if "json" not in content_type.lower():
            head = next(response.iter_bytes(), b"")
            raise ScrapeError(
                f"aws {parse.region}: expected JSON from {url} but got "
                f"{content_type or 'no content type'}: {snippet(head)}"
            )
        reader = _ByteReader(
            response.iter_bytes(CHUNK_BYTES),
            lambda n: parse.ctx.progress(f"aws {parse.region}: {n // 2**20} MiB read"),
        )
        try:
            parse_offer_file(ijson.parse(reader, use_float=False), parse)
        except ijson.JSONError as exc:
            raise ScrapeError(
                f"aws {parse.region}: offer file {url} is not valid JSON after "
                f"{reader.bytes_read} bytes ({exc})"
            ) from None


def fetch(client: httpx.Client, ctx: ScrapeContext) -> ScrapeBatch:
    """On-demand and reserved prices of multi-GPU instance types in the configured regions."""
    ctx.progress("aws: region index")
    index = _get_region_index(client)
    wanted = ctx.regions or DEFAULT_REGIONS
    missing = [r for r in wanted if r not in index]
    if len(missing) == len(wanted):
        raise ScrapeError(f"aws region index lists none of the regions {', '.join(wanted)}")
    for region in missing:
        ctx.warn(f"aws: region {region} is not in the region index; skipped")
    offers: list[ScrapedOffer] = []
    rejected: list[RejectedRow] = []
    for region in wanted:
        if region in missing:
            continue
        url = offer_file_url(index[region].currentVersionUrl)
        ctx.progress(f"aws {region}: offer file")
        parse = _RegionParse(region, url, ctx)
        _get_offer_file(client, url, parse)
        if parse.capacity_blocks:
            ctx.warn(
                f"aws {region}: Capacity Block product(s) told apart and skipped "
                f"(not on-demand prices): {', '.join(sorted(parse.capacity_blocks))}"
            )
        offers += parse.offers
        rejected += parse.rejected
    return ScrapeBatch(offers=tuple(offers), rejected=tuple(rejected), warnings=tuple(ctx.warnings))
