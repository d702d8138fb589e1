"""One snapshot of the catalog per data version, as files anyone may download and reuse.

A snapshot is named by the moment and number of the data version it holds
(`gpucatalog-2026-12-04-153012123456-v3910`: the write at 15:30:12.123456 UTC that made version
3910). The number alone repeats (every database counts from 0, and one restored from a backup
counts the same numbers again over other data), the moment does not, so two databases sharing a
folder, or one restored, never take each other's snapshot for their own. Each has two files, each
with a `.sha256` beside it in the form `sha256sum -c` reads:

- `<name>.json.gz`: every visible instance type in the API's shape (its facts with their bases
  and sources, every current price with its source, basis and date), the reference exchange
  rates, the price history of those types and each GPU model's weekly price index;
- `<name>.csv.zip`: the same tables as CSV (`instances.csv` as the API's CSV export,
  `prices.csv`, `price-history.csv`, `exchange-rates.csv`, `price-index.csv`) with
  `LICENCE.txt`.

Both are read in one REPEATABLE READ transaction, so they hold exactly one data version, and
carry nothing that depends on when they were written: the same version gives the same bytes
(gzip and zip times come from the version). A version that already has its snapshot is not
written again. Snapshots whose date is older than `DUMP_KEEP_DAYS` go, the newest never.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
import re
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from offerings.models import CatalogVersion, ExchangeRate, InstanceType, Offer, PriceObservation
from offerings.money import RateTable
from offerings.pages.price_index import price_indexes
from offerings.table.rows import for_serializing, iso_utc, render_csv, serialize_instance
from offerings.web.caching import site_url

LICENCE = "CC BY 4.0"
LICENCE_URL = "https://creativecommons.org/licenses/by/4.0/"
ATTRIBUTION = (
    "gpucatalog, a compilation of multi-GPU cloud instance types, their interconnects and prices; "
    "each fact and price names its own source"
)
PREFIX = "gpucatalog-"
# Snapshots written before the moment was part of the name (`gpucatalog-2026-12-04-v3910`) are
# still listed, served and pruned.
NAME_RE = re.compile(
    r"^gpucatalog-(?P<date>\d{4}-\d{2}-\d{2})(?:-(?P<time>\d{12}))?-v(?P<version>\d+)$"
)
FILE_RE = re.compile(
    r"^gpucatalog-\d{4}-\d{2}-\d{2}(?:-\d{12})?-v\d+\.(?:json\.gz|csv\.zip)(?:\.sha256)?$"
)
KINDS = (".json.gz", ".csv.zip")
BATCH = 500

# Column -> the field it reads, for prices.csv and the history (one list for header and query).
PRICE_COLUMNS = {
    "provider": "instance__provider__slug",
    "instance": "instance__slug",
    "region": "region__code",
    "kind": "kind",
    "term_months": "term_months",
    "price_per_hour": "price_per_hour",
    "currency": "currency",
    "price_per_gpu_hour_usd": "price_per_gpu_hour_usd",
    "exchange_rate_date": "exchange_rate_date",
    "observed_at": "observed_at",
    "available": "available",
    "source_url": "source_url",
    "basis": "basis",
}
HISTORY_COLUMNS = {
    column: f"offer__{PRICE_COLUMNS[column]}"
    for column in ("provider", "instance", "region", "kind", "term_months")
} | {"price_per_hour": "price_per_hour", "currency": "currency", "observed_at": "observed_at"}
INDEX_COLUMNS = ["gpu", "week", "median_usd_per_gpu_hour", "offers"]
RATE_COLUMNS = ["currency", "rate_date", "usd_per_unit", "source_url"]


@dataclass(frozen=True)
class SnapshotFile:
    name: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Snapshot:
    name: str
    day: date
    version: int
    files: tuple[SnapshotFile, ...]
    moment: str = ""  # HHMMSSffffff of the version's write, UTC ("" in the older names)


def dump_dir() -> Path:
    return Path(settings.DUMP_DIR)


def licence_text(name: str, changed_at: datetime) -> str:
    return (
        f"{name}: {ATTRIBUTION}.\n"
        f"Data version {name.rsplit('-v', 1)[1]}, written to the catalog at "
        f"{iso_utc(changed_at)}.\n\n"
        f"The compilation is licensed under {LICENCE} ({LICENCE_URL}): share and adapt it, for "
        "any purpose, with credit to gpucatalog and a link to the licence. Each fact and price "
        "carries its source URL, its basis (the provider states it, it follows from the "
        "vendor's platform, or a third party says it) and its date; those sources keep their "
        "own terms.\n"
        "Prices are references read at their sources, not quotes.\n"
    )


# -- writing ---------------------------------------------------------------------------------------


def publish(directory: Path | None = None, *, today: date | None = None) -> tuple[Snapshot, bool]:
    """Write the snapshot of the current data version unless it exists; prune old ones.
    Returns the snapshot and whether it was written now."""
    directory = directory or dump_dir()
    directory.mkdir(parents=True, exist_ok=True)
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        with connection.cursor() as cursor:
            if outermost:  # one snapshot of the database for every table the files hold
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            # One writer at a time (the daily task, a command, a redelivered task).
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext('gpucatalog:publish_dump'))")
        version = CatalogVersion.objects.get(pk=1)
        name = f"{PREFIX}{version.changed_at.astimezone(UTC):%Y-%m-%d-%H%M%S%f}-v{version.counter}"
        written = not all((directory / f"{name}{kind}.sha256").exists() for kind in KINDS)
        if written:
            _write(directory, name, version.changed_at)
    prune(directory, today=today or timezone.now().date())
    return read_snapshot(directory, name), written


def _write(directory: Path, name: str, changed_at: datetime) -> None:
    rates = RateTable()
    stamp = changed_at.astimezone(UTC)
    for kind, writer in ((".json.gz", _write_json), (".csv.zip", _write_csv)):
        target = directory / f"{name}{kind}"
        _write_whole(target, lambda raw, writer=writer: writer(raw, name, stamp, rates))
        with open(target, "rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
        line = f"{digest}  {target.name}\n".encode("ascii")
        _write_whole(directory / f"{target.name}.sha256", lambda raw, line=line: raw.write(line))


def _write_whole(target: Path, write) -> None:
    """`write` the file under a temporary name of its own, then rename it: a reader never sees
    half a file, and two writers never share one."""
    handle, partial = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".partial"
    )
    with os.fdopen(handle, "wb") as raw:
        write(raw)
    os.chmod(partial, 0o644)
    os.replace(partial, target)


def _write_json(raw, name: str, stamp: datetime, rates: RateTable) -> None:
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as out:
        text = io.TextIOWrapper(out, encoding="utf-8", newline="\n")
        head = {
            "name": name,
            "licence": {"name": LICENCE, "url": LICENCE_URL, "text": licence_text(name, stamp)},
            "data_version": int(name.rsplit("-v", 1)[1]),
            "data_changed_at": iso_utc(stamp),
            "site": settings.SITE_URL or None,
            "exchange_rates": [dict(zip(RATE_COLUMNS, row, strict=True)) for row in _rates()],
        }
        text.write(json.dumps(head, ensure_ascii=False, sort_keys=True)[:-1])
        _write_list(text, "instances", _instances(rates, stamp))
        _write_list(text, "price_history", _history_dicts())
        _write_list(text, "price_index", _index_rows(rates))
        text.write("}\n")
        text.flush()
        text.detach()


def _write_list(text, key: str, items: Iterator[dict]) -> None:
    text.write(f', "{key}": [')
    for index, item in enumerate(items):
        text.write(
            ("" if index == 0 else ", ") + json.dumps(item, ensure_ascii=False, sort_keys=True)
        )
    text.write("]")


def _write_csv(raw, name: str, stamp: datetime, rates: RateTable) -> None:
    when = stamp.timetuple()[:6]
    with zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:

        def member(filename: str):
            info = zipfile.ZipInfo(filename, date_time=when)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            return archive.open(info, "w", force_zip64=True)

        with member("LICENCE.txt") as out:
            out.write(licence_text(name, stamp).encode())
        with member("instances.csv") as out:
            _write_instances_csv(out, _instances(rates, stamp), rates)
        for filename, columns, rows in (
            ("prices.csv", PRICE_COLUMNS, _prices()),
            ("price-history.csv", HISTORY_COLUMNS, _history()),
            ("exchange-rates.csv", RATE_COLUMNS, _rates()),
            ("price-index.csv", INDEX_COLUMNS, (tuple(r.values()) for r in _index_rows(rates))),
        ):
            with member(filename) as out:
                text = io.TextIOWrapper(out, encoding="utf-8", newline="")
                rows_out = csv.writer(text, lineterminator="\r\n")
                rows_out.writerow(list(columns))
                rows_out.writerows(map(_csv_row, rows))
                text.flush()
                text.detach()


def _write_instances_csv(out, items: Iterator[dict], rates: RateTable) -> None:
    """The API's CSV export of every type, a batch at a time (one header: every row of the API
    has the same fields)."""
    header = None
    batch: list[dict] = []

    def flush() -> None:
        nonlocal header
        text = render_csv(batch, "USD", rates)
        first, _, body = text.partition("\r\n")
        if header is None:
            header = first
            out.write((first + "\r\n").encode())
        elif first != header:
            raise ValueError("the API's CSV columns changed between two batches")
        out.write(body.encode())
        batch.clear()

    for item in items:
        batch.append(item)
        if len(batch) == BATCH:
            flush()
    if batch or header is None:
        flush()


# -- reading the catalog ---------------------------------------------------------------------------


def _instances(rates: RateTable, stamp: datetime) -> Iterator[dict]:
    """Every visible type in the API's shape, in batches; `is_stale` (which depends on when the
    file is read, not on the data) is left out, `observed_at` says the same."""
    ids = list(
        InstanceType.objects.visible()
        .order_by("provider__slug", "slug")
        .values_list("pk", flat=True)
    )
    for start in range(0, len(ids), BATCH):
        chunk = ids[start : start + BATCH]
        # Each row's headline price as the table and the API show it by default (`best_offer`).
        rows = for_serializing(
            InstanceType.objects.for_table()
            .filter(pk__in=chunk)
            .annotate(row_offer_id=F("best_offer_id"))
        )
        by_pk = {row.pk: row for row in rows}
        for pk in chunk:
            item = serialize_instance(by_pk[pk], rates, stamp, site_url)
            for price in [item["price"], *item["prices"]]:
                if price:
                    price.pop("is_stale", None)
            yield item


def _visible_offers():
    return Offer.objects.current().filter(instance__in=InstanceType.objects.visible())


def _prices() -> Iterator[tuple]:
    key = list(PRICE_COLUMNS.values())[:5]
    return (
        _visible_offers()
        .order_by(*key)
        .values_list(*PRICE_COLUMNS.values())
        .iterator(chunk_size=5000)
    )


def _history() -> Iterator[tuple]:
    key = list(HISTORY_COLUMNS.values())[:5]
    return (
        PriceObservation.objects.filter(offer__instance__in=InstanceType.objects.visible())
        .order_by(*key, "observed_at", "pk")
        .values_list(*HISTORY_COLUMNS.values())
        .iterator(chunk_size=5000)
    )


def _history_dicts() -> Iterator[dict]:
    for row in _history():
        yield dict(zip(HISTORY_COLUMNS, map(_json_value, row), strict=True))


def _index_rows(rates: RateTable) -> Iterator[dict]:
    """Each GPU model's weekly median on-demand price per GPU-hour, from dated prices only
    (offerings/pages/price_index.py): the weeks with enough offers for a median."""
    for gpu, index in price_indexes(rates=rates).items():
        for week in index.weeks:
            values = (gpu, week.start, week.median_usd_per_gpu_hour, week.offers)
            yield dict(zip(INDEX_COLUMNS, map(_json_value, values), strict=True))


def _rates() -> list[tuple]:
    return [
        tuple(map(_json_value, row))
        for row in ExchangeRate.objects.order_by("currency", "rate_date").values_list(*RATE_COLUMNS)
    ]


def _json_value(value):
    """Exact values: a Decimal as its digits (no float rounding), dates in ISO 8601 UTC."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return iso_utc(value)
    if isinstance(value, date):
        return value.isoformat()
    return value


def _csv_row(row: tuple) -> list:
    out = []
    for value in map(_json_value, row):
        if value is None:
            out.append("")
        elif isinstance(value, bool):
            out.append("true" if value else "false")
        else:
            out.append(value)
    return out


# -- listing and keeping ---------------------------------------------------------------------------


def read_snapshot(directory: Path, name: str) -> Snapshot:
    match = NAME_RE.match(name)
    files = []
    for kind in KINDS:
        path = directory / f"{name}{kind}"
        sidecar = directory / f"{name}{kind}.sha256"
        if path.exists() and sidecar.exists():
            digest = sidecar.read_text(encoding="ascii").split()[0]
            files.append(SnapshotFile(path.name, path.stat().st_size, digest))
    return Snapshot(
        name,
        date.fromisoformat(match["date"]),
        int(match["version"]),
        tuple(files),
        match["time"] or "",
    )


def snapshots(directory: Path | None = None) -> list[Snapshot]:
    """The complete snapshots in `directory`, newest first (a file still being written, or one
    without its checksum, is not listed)."""
    directory = directory or dump_dir()
    if not directory.is_dir():
        return []
    names = {
        entry.name.split(".", 1)[0]
        for entry in directory.iterdir()
        if FILE_RE.match(entry.name) and NAME_RE.match(entry.name.split(".", 1)[0])
    }
    found = [read_snapshot(directory, name) for name in names]
    complete = [s for s in found if len(s.files) == len(KINDS)]
    return sorted(complete, key=lambda s: (s.day, s.moment, s.version), reverse=True)


def prune(directory: Path, *, today: date) -> list[str]:
    """Remove snapshots dated more than DUMP_KEEP_DAYS before `today`; never the newest."""
    kept = snapshots(directory)
    cutoff = today - timedelta(days=settings.DUMP_KEEP_DAYS)
    gone = [s for s in kept[1:] if s.day < cutoff]
    for snapshot in gone:
        for kind in KINDS:
            for suffix in ("", ".sha256"):
                (directory / f"{snapshot.name}{kind}{suffix}").unlink(missing_ok=True)
    return [s.name for s in gone]
