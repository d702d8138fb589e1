"""SkyPilot's public catalog: a second price source for the providers it covers.

SkyPilot (skypilot-org/skypilot-catalog) publishes one `vms.csv` per cloud, refreshed from the
providers' own APIs by its CI: `catalogs/<version>/<cloud>/vms.csv`, a plain HTTPS GET of the raw
file with no key. This is a price source, not a provider: its runs are kept under the slug
`skypilot`, each row it yields names the instance's own provider, and the writer lets it fill
only offers no other source supplies (the provider's scraper, the curated catalog or a curator
always win; SkyPilot's reading of those is kept as a check the lint compares).

Each file's date is its last commit, read from GitHub's public commits API (unauthenticated:
60 requests an hour); the raw file is then read at that commit, so the rows and the date agree.
When the commits API gives no answer, the file is read at `master` and its prices are undated
("date unknown"), never dated by the time of reading.

The catalog's quirks handled here (API_NOTES, section 11): the column order differs per cloud
(columns are read by name); a price of 0 or an empty price is no price; GCP lists a machine's
host price and its GPUs' price as separate rows (the GPU rows have an empty InstanceType), which
are added, per zone; a price per zone becomes one offer per region at the lowest zone price
(spot prices differ between zones). Only rows with two or more accelerators are read.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation

import httpx

from offerings.schemas import RejectedRow, ScrapeBatch, ScrapedOffer, instance_slug
from providers.base import (
    ScrapeContext,
    ScrapeError,
    read_json,
    snippet,
    spot_at_or_above_on_demand,
)
from providers.scrapers import aws, azure, gcp, lambda_, nebius, oci

SLUG = "skypilot"
REPOSITORY = "skypilot-org/skypilot-catalog"
REPOSITORY_URL = f"https://github.com/{REPOSITORY}"
RAW_URL = "https://raw.githubusercontent.com/{repository}/{ref}/{path}"
COMMITS_URL = f"https://api.github.com/repos/{REPOSITORY}/commits"
DEFAULT_REF = "master"
CURRENCY = "USD"  # SkyPilot's catalogs are in US dollars

REQUIRED_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")

# GCP machine family -> the accelerator name SkyPilot prices its GPUs under.
GCP_ACCELERATORS = {
    "a2-highgpu": "A100",
    "a2-megagpu": "A100",
    "a2-ultragpu": "A100-80GB",
    "a3-highgpu": "H100",
    "a3-edgegpu": "H100",
    "a3-megagpu": "H100-MEGA",
    "a3-ultragpu": "H200",
    "a4-highgpu": "B200",
    "g2-standard": "L4",
}
# GPUs per G2 machine (its name gives vCPUs, not GPUs).
G2_GPUS = {"g2-standard-24": 2, "g2-standard-48": 4, "g2-standard-96": 8}


def _nebius_slug(name: str) -> str:
    """SkyPilot names a Nebius type `<platform>_<preset>`, as the Nebius scraper's SKUs are."""
    platform, _, preset = name.partition("_")
    return nebius.mapped_slug(platform, preset) if preset else instance_slug(name)


def _paperspace_region(text: str) -> tuple[str, str]:
    """Paperspace's regions are names with the data-center code in brackets: "East Coast (NY2)"."""
    match = re.search(r"\(([A-Za-z0-9]+)\)", text)
    return (match.group(1).lower() if match else instance_slug(text)), text


def _paperspace_geo(code: str) -> str:
    return {"ny2": "na", "ca1": "na", "ams1": "eu"}.get(code, "")


def _named(code: str) -> tuple[str, str]:
    return code, ""


@dataclass(frozen=True)
class Cloud:
    """One SkyPilot cloud: its file, the provider it prices and how its names map."""

    name: str
    provider: str
    version: str
    slug_of: Callable[[str], str]
    geo_for: Callable[[str], str]
    # The catalog's Region cell -> (region code, region name) as the provider's own scraper
    # writes them; most clouds' cells are the code itself.
    region_of: Callable[[str], tuple[str, str]] = _named

    @property
    def path(self) -> str:
        return f"catalogs/{self.version}/{self.name}/vms.csv"


CLOUDS: dict[str, Cloud] = {
    cloud.name: cloud
    for cloud in (
        Cloud("aws", "aws", "v9", aws.mapped_slug, aws.geo_for),
        Cloud(
            "azure",
            "azure",
            "v6",
            azure.mapped_slug,
            lambda region: azure.REGION_GEO.get(region, ""),
        ),
        Cloud("gcp", "gcp", "v8", instance_slug, gcp.geo_for),
        Cloud("oci", "oci", "v8", instance_slug, oci.geo_for),
        Cloud("lambda", "lambda", "v9", lambda_.mapped_slug, lambda_.geo_for),
        Cloud("nebius", "nebius", "v8", _nebius_slug, nebius.geo_for),
        # Paperspace's catalog is only in v6; its type names are our instance names.
        Cloud("paperspace", "paperspace", "v6", instance_slug, _paperspace_geo, _paperspace_region),
    )
}


@dataclass(frozen=True)
class FileVersion:
    """Which version of a cloud's file was read, and when it was committed (None: unknown)."""

    ref: str
    committed_at: datetime | None


def last_commit(client: httpx.Client, cloud: Cloud, ctx: ScrapeContext) -> FileVersion:
    """The file's last commit and its date; `master`, undated, when GitHub gives no answer.

    A file pinned to a commit (a replay of a recording cut from that version) is read at that
    commit, undated: a stored copy of a file shows no date, and its commit date is not known
    offline."""
    pinned = ctx.pinned.get(cloud.path)
    if pinned is not None:
        if not re.fullmatch(r"[0-9a-f]{40}", pinned):
            raise ScrapeError(f"{SLUG} {cloud.name}: pinned commit {pinned!r} is not a full sha")
        ctx.warn(
            f"{cloud.name}: {cloud.path} read at the pinned commit {pinned[:12]} (a replay of a "
            "recording cut from it); its prices are undated, the commit's date is not known here"
        )
        return FileVersion(pinned, None)
    try:
        response = client.get(
            COMMITS_URL, params={"path": cloud.path, "sha": DEFAULT_REF, "per_page": "1"}
        )
        commits = read_json(response, f"{SLUG} {cloud.name} commits")
        sha = commits[0]["sha"]
        committed = commits[0]["commit"]["committer"]["date"]
        when = datetime.fromisoformat(committed.replace("Z", "+00:00"))
        if not re.fullmatch(r"[0-9a-f]{40}", sha) or when.tzinfo is None:
            raise ValueError(f"unexpected commit {sha!r} at {committed!r}")
    except (httpx.HTTPError, ScrapeError, LookupError, TypeError, ValueError) as exc:
        detail = " ".join(str(exc).split())[:120]
        ctx.warn(
            f"{cloud.name}: no date for {cloud.path}: GitHub's commits API gave no usable answer "
            f"({type(exc).__name__}: {detail}); its prices are read at {DEFAULT_REF}, undated"
        )
        return FileVersion(DEFAULT_REF, None)
    return FileVersion(sha, when)


def read_rows(client: httpx.Client, cloud: Cloud, version: FileVersion) -> list[dict[str, str]]:
    """The file's rows as dicts by column name; a clear error for anything but a usable CSV."""
    url = RAW_URL.format(repository=REPOSITORY, ref=version.ref, path=cloud.path)
    response = client.get(url)
    response.read()
    if response.is_error:
        raise ScrapeError(
            f"{SLUG} {cloud.name}: HTTP {response.status_code} {response.reason_phrase} from "
            f"{url}: {snippet(response.content)}"
        )
    try:
        text = response.content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScrapeError(f"{SLUG} {cloud.name}: {url} is not UTF-8 text ({exc})") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [column for column in REQUIRED_COLUMNS if column not in (reader.fieldnames or ())]
    if missing:
        raise ScrapeError(
            f"{SLUG} {cloud.name}: {url} lacks the column(s) {', '.join(missing)} "
            f"(header: {snippet(text.partition(chr(10))[0].encode())})"
        )
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise ScrapeError(f"{SLUG} {cloud.name}: {url} is not valid CSV ({exc})") from None
    if not rows:
        raise ScrapeError(f"{SLUG} {cloud.name}: {url} has a header but no rows")
    # A file cut short: SkyPilot writes its catalogs with pandas, which ends every row with a
    # line break, so a body that stops without one stops inside its last row (`...,,4.` for
    # `...,,4.60`), and a row with fewer or more cells than the header was cut or mangled.
    if not text.endswith(("\n", "\r")):
        raise ScrapeError(
            f"{SLUG} {cloud.name}: {url} ends inside a row (no line break after its last row, "
            f"{snippet(text[-60:].encode())!s}): the file was cut short"
        )
    width = len(reader.fieldnames)
    for number, row in enumerate(rows, 2):
        # DictReader files surplus cells under None and fills missing ones with None.
        cells = sum(value is not None for key, value in row.items() if key is not None)
        cells += len(row.get(None) or ())
        if cells != width:
            raise ScrapeError(
                f"{SLUG} {cloud.name}: {url} row {number} has {cells} cell(s) where the header "
                f"has {width}: the file was cut short or mangled"
            )
    return rows


def _price(text: str | None) -> Decimal | None:
    """A price cell: None for empty or 0 (SkyPilot's "no price"); ValueError for garbage."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"price {text!r} is not a number") from None
    if not value.is_finite() or value < 0:
        raise ValueError(f"price {text!r} is not a usable amount")
    return value if value > 0 else None


def _count(text: str | None) -> int:
    try:
        return int(Decimal((text or "0").strip() or "0"))
    except (InvalidOperation, ValueError):
        return 0


def _gcp_gpus(name: str) -> tuple[str, int] | None:
    """The accelerator name and count a GCP machine type is priced with, if it is one we know."""
    family = "-".join(name.split("-")[:2])
    accelerator = GCP_ACCELERATORS.get(family)
    if accelerator is None:
        return None
    if name in G2_GPUS:
        return accelerator, G2_GPUS[name]
    match = re.search(r"-(\d+)g$", name)
    return (accelerator, int(match.group(1))) if match else None


# SkyPilot's GCP fetcher takes the first GPU SKU typed OnDemand whose description contains the
# GPU's name (sky/catalog/data_fetchers/fetch_gcp.py, get_gpu_price), and Dynamic Workload
# Scheduler SKUs are typed OnDemand too ("Nvidia H100 80GB GPU attached to DWS Defined Duration
# VMs running in Americas", $4.200761 per GPU-hour, against $9.80-12.74 for the on-demand SKUs of
# the same GPU): in some regions its on-demand column holds a DWS flex-start rate. GCP's own
# on-demand GPU prices differ by region by about a third at most (H100 80GB: 9.80 in us-east4 to
# 12.74 in europe-west4 per GPU-hour in the same file), so a GPU row priced below this share of the
# same accelerator's highest regional price is taken for another purchase model and left out of
# on-demand.
GCP_OTHER_MODEL_SHARE = Decimal("0.6")

# Machine types GCP does not sell on demand at all, only as spot, through the Dynamic Workload
# Scheduler or reserved: Google's table of consumption options by machine type
# (cloud.google.com/compute/docs/accelerator-optimized-machines, "Consumption option availability
# by machine type") as dstack's maintainers cite it: A4 in dstackai/dstack#3100 (2025-09-29), A4X,
# A4 and A3 Ultra in dstackai/dstack#3162 (2025-10-08), A3 High below 8 GPUs in
# dstackai/gpuhunt#176 (2025-09-13). SkyPilot's on-demand column for them holds whichever OnDemand-
# typed SKU its fetcher met first: for a4-highgpu-8g, 90.216 (a DWS Calendar Mode rate, $11.28
# per GPU-hour) in some regions and 64.44 in others. Their on-demand rows are left out.
GCP_NOT_ON_DEMAND = re.compile(r"^(?:a4-highgpu-|a4x-|a3-ultragpu-|a3-highgpu-[124]g$)")


def _gcp_other_model_rows(gpu_rows: dict[tuple, dict[str, str]]) -> set[tuple]:
    """The GPU rows whose on-demand price is another purchase model's (see above)."""
    priced: dict[tuple, Decimal] = {}
    for key, row in gpu_rows.items():
        try:
            price = _price(row.get("Price"))
        except ValueError:
            continue  # the zone loop names a bad price when it reads the row
        if price is not None:
            priced[key] = price
    highest: dict[tuple, Decimal] = {}  # (accelerator, count) -> its highest regional price
    for (accelerator, count, _region, _zone), price in priced.items():
        highest[accelerator, count] = max(highest.get((accelerator, count), price), price)
    return {
        key for key, price in priced.items() if price < GCP_OTHER_MODEL_SHARE * highest[key[:2]]
    }


def _other_model(name: str, gpus: tuple[str, int], gpu_row: dict, low: bool) -> str | None:
    """Why a GCP type's on-demand price is another purchase model's (None: it is on demand):
    a type GCP does not sell on demand, or a GPU row priced like DWS (`low`, see above)."""
    price = gpu_row.get("Price")
    if GCP_NOT_ON_DEMAND.match(name):
        return (
            f"GCP does not sell {name} on demand (only spot, DWS or reserved), so the on-demand "
            f"price {price} is another purchase model's"
        )
    if low:
        return (
            f"the {gpus[0]} x{gpus[1]} on-demand price {price} is under "
            f"{GCP_OTHER_MODEL_SHARE:.0%} of that GPU's highest regional price: another purchase "
            "model (a DWS flex-start rate SkyPilot's fetcher matched)"
        )
    return None


@dataclass
class _Reading:
    """The lowest price per (type, region, kind) over the zones of a region."""

    price: Decimal
    zones: list[str]


def _zone_prices(cloud: Cloud, rows: list[dict[str, str]], rejected: list[RejectedRow]):
    """(type, region, kind) -> lowest zone price; GCP host and GPU rows added per zone."""
    gpu_rows: dict[tuple[str, int, str, str], dict[str, str]] = {}
    if cloud.name == "gcp":
        for row in rows:
            if not (row.get("InstanceType") or "").strip():
                key = (
                    (row.get("AcceleratorName") or "").strip(),
                    _count(row.get("AcceleratorCount")),
                    (row.get("Region") or "").strip(),
                    (row.get("AvailabilityZone") or "").strip(),
                )
                gpu_rows[key] = row
    other_model = _gcp_other_model_rows(gpu_rows) if cloud.name == "gcp" else set()
    left_out: set[tuple[str, str]] = set()
    readings: dict[tuple[str, str, str], _Reading] = {}
    for row in rows:
        name = (row.get("InstanceType") or "").strip()
        region = (row.get("Region") or "").strip()
        zone = (row.get("AvailabilityZone") or "").strip()
        if not name or not region:
            continue
        region, _ = cloud.region_of(region)
        gpus = _gcp_gpus(name) if cloud.name == "gcp" else None
        count = gpus[1] if gpus else _count(row.get("AcceleratorCount"))
        if count < 2:
            continue  # single-GPU and CPU types are not in this catalog
        extra = None
        if cloud.name == "gcp":
            key = (gpus[0], gpus[1], region, zone) if gpus else None
            extra = gpu_rows.get(key) if key else None
            if extra is None:
                continue  # no GPU price row for this zone: the host price alone is not the price
        why = None if extra is None else _other_model(name, gpus, extra, key in other_model)
        for kind, column in (("on-demand", "Price"), ("spot", "SpotPrice")):
            if kind == "on-demand" and why:
                if (name, region) not in left_out:
                    left_out.add((name, region))
                    reason = f"{cloud.name} {region}: {why}; left out"
                    rejected.append(RejectedRow(sku=name, provider=cloud.provider, reason=reason))
                continue
            try:
                price = _price(row.get(column))
                if extra is not None:
                    gpu_price = _price(extra.get(column))
                    price = None if gpu_price is None else (price or Decimal(0)) + gpu_price
            except ValueError as exc:
                rejected.append(
                    RejectedRow(
                        sku=name,
                        reason=f"{cloud.name} {region} {zone} {column}: {exc}",
                        instance_slug=cloud.slug_of(name),
                        provider=cloud.provider,
                        region=region,
                        kind=kind,
                    )
                )
                continue
            if price is None:
                continue
            reading = readings.get((name, region, kind))
            if reading is None or price < reading.price:
                readings[(name, region, kind)] = _Reading(price, [zone] if zone else [])
            elif price == reading.price and zone:
                reading.zones.append(zone)
    return readings


def offers_of(
    cloud: Cloud, rows: list[dict[str, str]], version: FileVersion
) -> tuple[list[ScrapedOffer], list[RejectedRow]]:
    """One cloud file's rows as offers of its provider's instance types."""
    rejected: list[RejectedRow] = []
    source_url = f"{REPOSITORY_URL}/blob/{version.ref}/{cloud.path}"
    names = dict(cloud.region_of((row.get("Region") or "").strip()) for row in rows)
    offers = [
        ScrapedOffer(
            sku=name,
            instance_slug=cloud.slug_of(name),
            provider=cloud.provider,
            region=region,
            region_name=names.get(region, ""),
            geo=cloud.geo_for(region),
            kind=kind,
            price_per_hour=reading.price,
            currency=CURRENCY,
            source_url=source_url,
            observed_at=version.committed_at,
            parsed={"cloud": cloud.name, "zones": sorted(reading.zones)},
        )
        for (name, region, kind), reading in _zone_prices(cloud, rows, rejected).items()
    ]
    offers, defects = spot_at_or_above_on_demand(offers)
    return offers, rejected + defects


def clouds_for(names: Iterable[str]) -> list[Cloud]:
    names = list(names) or list(CLOUDS)
    unknown = [name for name in names if name not in CLOUDS]
    if unknown:
        raise ScrapeError(
            f"{SLUG}: unknown cloud(s) {', '.join(unknown)}; known: {', '.join(CLOUDS)}"
        )
    return [CLOUDS[name] for name in names]


def fetch(client: httpx.Client, ctx: ScrapeContext) -> ScrapeBatch:
    """Every wanted cloud's file (SKYPILOT_CLOUDS, default all): one cloud failing fails the run,
    so no offer is retired for a file that could not be read."""
    offers: list[ScrapedOffer] = []
    rejected: list[RejectedRow] = []
    parts: dict[str, int] = {}
    for cloud in clouds_for(ctx.regions):
        ctx.progress(f"{cloud.name}: reading {cloud.path}")
        version = last_commit(client, cloud, ctx)
        cloud_offers, cloud_rejected = offers_of(cloud, read_rows(client, cloud, version), version)
        # The rows this file gave the catalog (its multi-GPU readings), not its every line: a
        # live file's CPU types come and go without saying anything about ours.
        parts[cloud.path] = len(cloud_offers) + len(cloud_rejected)
        if not cloud_offers:
            ctx.warn(f"{cloud.name}: no multi-GPU price in {cloud.path}")
        offers += cloud_offers
        rejected += cloud_rejected
    return ScrapeBatch(
        offers=tuple(offers),
        rejected=tuple(rejected),
        warnings=tuple(ctx.warnings),
        dated=True,
        parts=parts,
    )
