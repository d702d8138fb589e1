"""Turning filtered instance types into rows: the row price, the API shape, CSV and currency.

Shared by the filter page, `/api/instances`, the exports and the feed, so every surface shows
the same rows with the same numbers.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from datetime import UTC, date, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import NamedTuple

from django.db.models import prefetch_related_objects
from django.urls import reverse

from offerings import platform
from offerings.models import (
    CollectiveResult,
    InstanceType,
    LinkTechnology,
    Offer,
    collective_results_prefetch,
    purchase_modes_prefetch,
)
from offerings.money import RateTable
from offerings.purchase import serialize_purchase_modes
from offerings.web.paths import attach_paths

FOUR_PLACES = Decimal("0.0001")
USD = "USD"


def money(value: Decimal | None) -> float | None:
    """Round half-even to 4 decimals, once, and hand JSON a number."""
    if value is None:
        return None
    return float(value.quantize(FOUR_PLACES, rounding=ROUND_HALF_EVEN))


class PriceRow(NamedTuple):
    """A current offer as the API and the exports read it: a row of values, not a model (a page
    of rows carries thousands of prices)."""

    pk: int
    instance_id: int
    kind: str
    term_months: int | None
    region_code: str
    price_per_hour: Decimal
    currency: str
    exchange_rate_date: date | None
    observed_at: datetime | None
    available: bool | None
    source_url: str
    basis: str

    def is_stale(self, now: datetime | None = None, *, cutoff: datetime | None = None) -> bool:
        return Offer.stale_at(self.observed_at, now, cutoff=cutoff)


def attach_price_rows(rows: list[InstanceType]) -> list[InstanceType]:
    """Give each row `current_offers`: its current prices as `PriceRow`s, in the order the
    detail page lists them, for the whole batch in one query."""
    by_instance: dict[int, list[PriceRow]] = {row.pk: [] for row in rows}
    if by_instance:
        values = (
            Offer.objects.current()
            .filter(instance_id__in=list(by_instance))
            .values_list(*PRICE_ROW_COLUMNS)
        )
        for values_row in values:
            price = PriceRow._make(values_row)
            by_instance[price.instance_id].append(price)
    for row in rows:
        row.current_offers = by_instance[row.pk]
    return rows


PRICE_ROW_COLUMNS = [
    "pk",
    "instance_id",
    "kind",
    "term_months",
    "region__code",
    "price_per_hour",
    "currency",
    "exchange_rate_date",
    "observed_at",
    "available",
    "source_url",
    "basis",
]


def attach_row_offers(instances: Iterable[InstanceType]) -> list[InstanceType]:
    """Give each row its `row_offer`: the offer the FilterSet chose as its price.

    Rows from `for_listing()` find it among their prefetched offers; rows from `for_table()`
    find their default price read with them (`best_offer`, when no price filter chose another),
    and get the other chosen offers of the whole page in one query.
    """
    rows = list(instances)
    if rows and not hasattr(rows[0], "current_offers"):
        found = {
            row.best_offer.pk: row.best_offer
            for row in rows
            if InstanceType.best_offer.is_cached(row) and row.best_offer is not None
        }
        chosen = {getattr(row, "row_offer_id", None) for row in rows} - {None} - set(found)
        if chosen:
            found |= Offer.objects.filter(pk__in=chosen).select_related("region").in_bulk()
        for row in rows:
            row.row_offer = found.get(getattr(row, "row_offer_id", None))
        return rows
    for row in rows:
        chosen_id = getattr(row, "row_offer_id", None)
        row.row_offer = next((o for o in row.current_offers if o.pk == chosen_id), None)
    return rows


def for_serializing(rows: Iterable[InstanceType]) -> list[InstanceType]:
    """Load what `serialize_instance` reads beyond `for_table()`, for a batch of rows in three
    queries: prices (as `PriceRow`s), curated purchase modes and published collective results;
    then pick each row's price and build its links."""
    rows = attach_price_rows(list(rows))
    prefetch_related_objects(rows, purchase_modes_prefetch(), collective_results_prefetch())
    return attach_paths(attach_row_offers(rows))


def collective_results_of(instance: InstanceType) -> list[CollectiveResult]:
    """The row's published collective results: prefetched by `for_serializing` (one
    query a page), else one query."""
    listed = getattr(instance, "listed_collective_results", None)
    if listed is not None:
        return list(listed)
    prefetch_related_objects([instance], collective_results_prefetch())
    return list(instance.listed_collective_results)


def serialize_collective_result(result: CollectiveResult) -> dict:
    return {
        "collective": result.collective,
        "nodes": result.nodes,
        "gpus": result.gpus,
        "message_bytes": result.message_bytes,
        "busbw_gbytes_per_s": float(result.busbw_gbytes_per_s),
        "basis": result.basis,
        "source_url": result.source_url,
        "verified_at": result.verified_at.isoformat() if result.verified_at else None,
        "notes": result.notes,
    }


def offer_usd(
    offer: Offer | PriceRow, gpu_count: int, rates: RateTable
) -> tuple[Decimal | None, ...]:
    """Exact USD per hour and per GPU-hour, from the price charged and its dated rate."""
    per_hour = rates.usd(offer.price_per_hour, offer.currency, offer.exchange_rate_date)
    if per_hour is None:
        return None, None
    return per_hour, per_hour / gpu_count


def iso_utc(moment: datetime | None) -> str | None:
    """ISO-8601 in UTC with a Z, or None for a price whose source shows no date."""
    if moment is None:
        return None
    if moment.tzinfo is not UTC:  # the database's own are already
        moment = moment.astimezone(UTC)
    return moment.isoformat().replace("+00:00", "Z")


def serialize_offer(
    offer: PriceRow, gpu_count: int, rates: RateTable, stale_cutoff: datetime
) -> dict:
    """The API's shape of one price; `stale_cutoff`: `Offer.stale_cutoff(now)`, once a page."""
    per_hour, per_gpu_hour = offer_usd(offer, gpu_count, rates)
    item = {
        "kind": offer.kind,
        "term_months": offer.term_months,
        "region": offer.region_code,
        "price_per_hour": money(per_hour),
        "price_per_gpu_hour": money(per_gpu_hour),
        "currency": USD,
        "observed_at": iso_utc(offer.observed_at),
        "is_stale": offer.is_stale(cutoff=stale_cutoff),
        "available": offer.available,
        "source_url": offer.source_url,
        "basis": offer.basis,
    }
    if offer.currency != USD:
        item["original_price"] = money(offer.price_per_hour)
        item["original_currency"] = offer.currency
        item["exchange_rate_date"] = (
            offer.exchange_rate_date.isoformat() if offer.exchange_rate_date else None
        )
    return item


def known_basis(basis: dict, values: dict) -> dict:
    """The basis of each known field of an API object (an unknown field has no key)."""
    return {
        name: basis[name]
        for name, value in values.items()
        if name in basis and platform.is_known(value)
    }


def serialize_link(instance: InstanceType) -> dict | None:
    link = getattr(instance, "gpu_link", None)
    if link is None:
        return {
            "technology": "unknown",
            "generation": None,
            "topology": None,
            "domain_size": None,
            "bandwidth_gbytes_per_s": None,
            "basis": {},
        }
    if link.technology == LinkTechnology.NONE:
        return None
    values = {
        "technology": link.technology,
        "generation": link.generation,
        "topology": link.topology or None,
        "domain_size": link.domain_size,
        "bandwidth_gbytes_per_s": link.bandwidth_gbytes_per_s,
    }
    return values | {"basis": known_basis(link.basis, values)}


def gpu_link_of(instance: InstanceType) -> tuple[str, str | None]:
    """`gpu_link` and its basis: none (verified PCIe only), nvlink, infinity-fabric or unknown."""
    link = getattr(instance, "gpu_link", None)
    if link is None or link.technology == LinkTechnology.UNKNOWN:
        return "unknown", None
    return link.technology, link.basis.get("technology")


def serialize_fabric(instance: InstanceType) -> dict:
    fabric = getattr(instance, "fabric", None)
    if fabric is None:
        return dict.fromkeys(
            ["bandwidth_gbits_per_s", "nics", "gpudirect_rdma", "multi_node", "max_nodes"]
        ) | {"technology": "unknown", "basis": {}}
    values = {
        "technology": fabric.technology,
        "bandwidth_gbits_per_s": fabric.bandwidth_gbits_per_s,
        "nics": fabric.nics,
        "gpudirect_rdma": fabric.gpudirect_rdma,
        "multi_node": fabric.multi_node,
        "max_nodes": fabric.max_nodes,
    }
    return values | {"basis": known_basis(fabric.basis, values)}


def general_network_of(instance: InstanceType) -> dict:
    """The instance's general network (VPC, storage, internet), apart from `fabric`: its Gb/s,
    whether it runs over the same network cards as the back-end, and the figure's basis."""
    fabric = getattr(instance, "fabric", None)
    gbits = fabric.network_gbits_per_s if fabric is not None else None
    if gbits is None:
        return {"network_gbits_per_s": None, "network_shared": None, "network_basis": None}
    return {
        "network_gbits_per_s": gbits,
        "network_shared": bool(fabric.network_shared),
        "network_basis": fabric.basis.get("network_gbits_per_s"),
    }


def fabric_generation_of(instance: InstanceType) -> str | None:
    """The back-end fabric's generation (efa-v1 .. efa-v4, tcpx, tcpxo); None when no source
    states it or the fabric has none on record."""
    fabric = getattr(instance, "fabric", None)
    return (fabric.generation if fabric is not None else "") or None


def sources_of(instance: InstanceType) -> list[str]:
    urls = [instance.source_url]
    for part in (getattr(instance, "gpu_link", None), getattr(instance, "fabric", None)):
        if part is not None:
            urls.append(part.source_url)
    fabric = getattr(instance, "fabric", None)
    if fabric is not None:
        urls.append(fabric.cluster_source_url)
    urls.extend(offer.source_url for offer in instance.current_offers)
    return list(dict.fromkeys(url for url in urls if url))


def detail_path(instance: InstanceType) -> str:
    return reverse(
        "offerings:instance-detail",
        kwargs={"provider": instance.provider.slug, "slug": instance.slug},
    )


def serialize_instance(
    instance: InstanceType, rates: RateTable, now: datetime, build_absolute_uri
) -> dict:
    """The API's shape of one row (the README's public interface, "JSON API"), for a row
    loaded by `for_serializing`."""
    count = instance.gpu_count
    cutoff = Offer.stale_cutoff(now)
    row_offer = getattr(instance, "row_offer", None)
    gpu_link, gpu_link_basis = gpu_link_of(instance)
    return {
        "id": instance.pk,
        "provider": instance.provider.slug,
        "name": instance.name,
        "slug": instance.slug,
        "gpu": instance.gpu.slug,
        "gpu_count": count,
        "gpu_memory_gib": instance.gpu.memory_gib,
        "vcpus": instance.vcpus,
        "ram_gib": float(instance.ram_gib) if instance.ram_gib is not None else None,
        "nvlink": serialize_link(instance),
        "fabric": serialize_fabric(instance),
        **general_network_of(instance),
        "fabric_generation": fabric_generation_of(instance),
        "gpu_link": gpu_link,
        "gpu_link_basis": gpu_link_basis,
        "price": serialize_offer(row_offer, count, rates, cutoff) if row_offer else None,
        "prices": [serialize_offer(o, count, rates, cutoff) for o in instance.current_offers],
        "purchase_modes": serialize_purchase_modes(instance),
        "collective_results": [
            serialize_collective_result(result) for result in collective_results_of(instance)
        ],
        "sources": sources_of(instance),
        "verified_at": instance.verified_at.isoformat() if instance.verified_at else None,
        "url": build_absolute_uri(instance.detail_path),
    }


# A price object's fields in the API (`serialize_offer`), in order: every price has the first
# list, a price charged in another currency the second too. The OpenAPI document and the CSV
# export's price columns are built from these.
PRICE_FIELDS = [
    "kind",
    "term_months",
    "region",
    "price_per_hour",
    "price_per_gpu_hour",
    "currency",
    "observed_at",
    "is_stale",
    "available",
    "source_url",
    "basis",
]
PRICE_CONVERSION_FIELDS = ["original_price", "original_currency", "exchange_rate_date"]
CSV_PRICE_FIELDS = PRICE_FIELDS + PRICE_CONVERSION_FIELDS


def flatten(item: dict, currency: str, rates: RateTable) -> dict:
    """One CSV row: nested objects joined by `_`, lists by spaces, prices in `currency`."""
    flat: dict = {}
    for key, value in item.items():
        if key in ("prices", "purchase_modes", "collective_results"):
            continue
        if key == "price":
            price = value or {}
            for field in CSV_PRICE_FIELDS:
                flat[f"price_{field}"] = price.get(field)
            if value and currency != USD:
                for field in ("price_per_hour", "price_per_gpu_hour"):
                    usd = value[field]
                    shown = rates.display(Decimal(str(usd)) if usd is not None else None, currency)
                    flat[f"price_{field}"] = money(shown)
                flat["price_currency"] = currency
            continue
        if isinstance(value, dict):
            for inner, inner_value in value.items():
                if inner == "basis":  # one column per field, whether known or not
                    for name in BASIS_COLUMNS[key]:
                        flat[f"{key}_basis_{name}"] = inner_value.get(name)
                else:
                    flat[f"{key}_{inner}"] = inner_value
        elif key == "nvlink" and value is None:
            for inner in ("technology", "generation", "topology", "domain_size"):
                flat[f"nvlink_{inner}"] = "none" if inner == "technology" else None
            flat["nvlink_bandwidth_gbytes_per_s"] = None
            for name in BASIS_COLUMNS["nvlink"]:
                flat[f"nvlink_basis_{name}"] = None
        elif isinstance(value, list):
            flat[key] = " ".join(value)
        else:
            flat[key] = value
    return flat


BASIS_COLUMNS = {"nvlink": platform.LINK_FIELDS, "fabric": platform.FABRIC_FIELDS}


def render_csv(items: list[dict], currency: str, rates: RateTable) -> str:
    rows = [flatten(item, currency, rates) for item in items]
    header = list(rows[0]) if rows else list(flatten(EMPTY_ITEM, currency, rates))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header, lineterminator="\r\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else _csv_value(v) for k, v in row.items()})
    return buffer.getvalue()


def _csv_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value  # keep spreadsheet formulas from running (CSV injection)
    return value


EMPTY_ITEM = {
    "id": None,
    "provider": None,
    "name": None,
    "slug": None,
    "gpu": None,
    "gpu_count": None,
    "gpu_memory_gib": None,
    "vcpus": None,
    "ram_gib": None,
    "nvlink": {
        "technology": None,
        "generation": None,
        "topology": None,
        "domain_size": None,
        "bandwidth_gbytes_per_s": None,
        "basis": {},
    },
    "fabric": {
        "technology": None,
        "bandwidth_gbits_per_s": None,
        "nics": None,
        "gpudirect_rdma": None,
        "multi_node": None,
        "max_nodes": None,
        "basis": {},
    },
    "network_gbits_per_s": None,
    "network_shared": None,
    "network_basis": None,
    "fabric_generation": None,
    "gpu_link": None,
    "gpu_link_basis": None,
    "price": None,
    "prices": [],
    "purchase_modes": [],
    "collective_results": [],
    "sources": [],
    "verified_at": None,
    "url": None,
}


def with_display_prices(rows: list[InstanceType], rates: RateTable, currency: str) -> list:
    """Set `shown_per_hour` and `shown_per_gpu_hour` on each row, in the display currency."""
    for row in rows:
        offer = getattr(row, "row_offer", None)
        per_hour = per_gpu_hour = None
        if offer is not None:
            per_hour, per_gpu_hour = offer_usd(offer, row.gpu_count, rates)
        row.shown_per_hour = rates.display(per_hour, currency)
        row.shown_per_gpu_hour = rates.display(per_gpu_hour, currency)
    return rows
