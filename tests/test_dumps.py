"""Issue 32, item 4: dated data dumps at /data/, one per data version, byte-identical, checked
by their .sha256, licensed, kept for DUMP_KEEP_DAYS, and enough to rebuild the table."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
import re
import zipfile
from datetime import date, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from offerings.dumps import snapshot
from offerings.models import InstanceType, Offer, PriceObservation


@pytest.fixture
def dumps(settings, tmp_path):
    settings.DUMP_DIR = tmp_path / "dumps"
    return settings.DUMP_DIR


def _files(directory):
    return sorted(p.name for p in directory.iterdir())


def _json(directory, published) -> dict:
    name = next(f.name for f in published.files if f.name.endswith(".json.gz"))
    return json.loads(gzip.decompress((directory / name).read_bytes()))


def _zip(directory, published) -> zipfile.ZipFile:
    name = next(f.name for f in published.files if f.name.endswith(".csv.zip"))
    return zipfile.ZipFile(directory / name)


def test_a_snapshot_is_two_files_each_with_a_matching_sha256(shipped, dumps):
    published, written = snapshot.publish()
    assert written
    assert re.fullmatch(rf"gpucatalog-{date.today():%Y-%m-%d}-\d{{12}}-v\d+", published.name)
    assert _files(dumps) == sorted(
        f"{published.name}{kind}{suffix}"
        for kind in (".json.gz", ".csv.zip")
        for suffix in ("", ".sha256")
    )
    for file in published.files:
        digest = hashlib.sha256((dumps / file.name).read_bytes()).hexdigest()
        assert (dumps / f"{file.name}.sha256").read_text() == f"{digest}  {file.name}\n"
        assert file.sha256 == digest
        assert file.size == (dumps / file.name).stat().st_size


def test_the_json_holds_every_visible_type_its_sourced_prices_and_the_history(shipped, dumps):
    hidden = InstanceType.objects.visible().order_by("pk").first()
    hidden.is_hidden = True
    hidden.save()
    published, _ = snapshot.publish()
    data = _json(dumps, published)
    assert data["licence"]["name"] == "CC BY 4.0"
    assert "creativecommons.org/licenses/by/4.0" in data["licence"]["url"]
    assert "CC BY 4.0" in data["licence"]["text"]
    assert data["data_version"] == published.version
    ids = {item["id"] for item in data["instances"]}
    assert ids == set(InstanceType.objects.visible().values_list("pk", flat=True))
    assert hidden.pk not in ids
    prices = [p for item in data["instances"] for p in item["prices"]]
    assert len(prices) == Offer.objects.current().filter(instance_id__in=ids).count()
    assert all(p["source_url"] and p["basis"] in ("provider", "third-party") for p in prices)
    assert all("observed_at" in p and "is_stale" not in p for p in prices)
    assert {p["basis"] for p in prices} == {"provider", "third-party"}
    history = PriceObservation.objects.filter(offer__instance_id__in=ids).count()
    assert len(data["price_history"]) == history
    assert {r["currency"] for r in data["exchange_rates"]} >= {"CNY"}


def test_the_csv_zip_holds_the_same_tables_and_the_licence(shipped, dumps):
    published, _ = snapshot.publish()
    archive = _zip(dumps, published)
    assert sorted(archive.namelist()) == [
        "LICENCE.txt",
        "exchange-rates.csv",
        "instances.csv",
        "price-history.csv",
        "price-index.csv",
        "prices.csv",
    ]
    assert "CC BY 4.0" in archive.read("LICENCE.txt").decode()
    data = _json(dumps, published)
    instances = list(csv.DictReader(io.StringIO(archive.read("instances.csv").decode())))
    assert [int(r["id"]) for r in instances] == [i["id"] for i in data["instances"]]
    prices = list(csv.DictReader(io.StringIO(archive.read("prices.csv").decode())))
    assert len(prices) == sum(len(i["prices"]) for i in data["instances"])
    assert set(prices[0]) >= {"source_url", "basis", "observed_at", "price_per_hour", "currency"}
    history = list(csv.DictReader(io.StringIO(archive.read("price-history.csv").decode())))
    assert len(history) == len(data["price_history"])


def test_the_same_data_version_gives_the_same_bytes_and_is_not_written_twice(
    shipped, dumps, tmp_path
):
    first, written = snapshot.publish()
    assert written
    stamps = {name: os.stat(dumps / name).st_mtime_ns for name in _files(dumps)}
    again, written = snapshot.publish()
    assert (again, written) == (first, False)
    assert {name: os.stat(dumps / name).st_mtime_ns for name in _files(dumps)} == stamps
    _elsewhere, written = snapshot.publish(tmp_path / "elsewhere")
    assert written
    for file in first.files:
        assert (dumps / file.name).read_bytes() == (tmp_path / "elsewhere" / file.name).read_bytes()


def test_a_write_to_the_catalog_makes_a_new_snapshot(shipped, dumps):
    first, _ = snapshot.publish()
    offer = Offer.objects.current().first()
    offer.price_per_hour += 1
    offer.save()
    second, written = snapshot.publish()
    assert written
    assert second.version > first.version
    assert [s.name for s in snapshot.snapshots()] == [second.name, first.name]


def test_a_restored_database_counting_the_same_numbers_again_gets_snapshots_of_its_own(
    shipped, dumps
):
    """Every database counts its versions from 0, and one restored from a backup counts the
    same numbers again over other data: the moment of the version's write tells them apart."""
    from django.db import connection

    from offerings.models import CatalogVersion

    first, _ = snapshot.publish()
    backed_up = CatalogVersion.objects.get(pk=1)
    offer = Offer.objects.current().first()
    price = offer.price_per_hour
    Offer.objects.filter(pk=offer.pk).update(price_per_hour=price + 1)
    second, _ = snapshot.publish()
    # The backup taken at `first` comes back: its data and its version row.
    Offer.objects.filter(pk=offer.pk).update(price_per_hour=price)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE offerings_catalogversion SET counter = %s, changed_at = %s",
            [backed_up.counter, backed_up.changed_at],
        )
    assert snapshot.publish() == (first, False)  # the same state: the same snapshot
    # Another write after the restore reaches second's number again, at a later moment (the
    # test's transaction has one now(): the hour is added by hand).
    Offer.objects.filter(pk=offer.pk).update(price_per_hour=price + 2)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE offerings_catalogversion SET changed_at = changed_at + '1 hour'")
    third, written = snapshot.publish()
    assert third.version == second.version
    assert written
    assert third.name != second.name
    assert _json(dumps, third)["instances"] != _json(dumps, second)["instances"]


def test_snapshots_named_before_the_moment_was_in_the_name_are_still_listed(dumps):
    dumps.mkdir()
    old = _fake_snapshot(dumps, date(2026, 12, 1), 7)
    new = "gpucatalog-2026-12-02-101500000000-v3"
    for kind in (".json.gz", ".csv.zip"):
        (dumps / f"{new}{kind}").write_bytes(b"x")
        (dumps / f"{new}{kind}.sha256").write_text(f"{'0' * 64}  {new}{kind}\n")
    assert [s.name for s in snapshot.snapshots(dumps)] == [new, old]


def _fake_snapshot(directory, day: date, version: int) -> str:
    name = f"gpucatalog-{day:%Y-%m-%d}-v{version}"
    for kind in (".json.gz", ".csv.zip"):
        (directory / f"{name}{kind}").write_bytes(b"x")
        (directory / f"{name}{kind}.sha256").write_text(f"{'0' * 64}  {name}{kind}\n")
    return name


def test_snapshots_older_than_the_keeping_period_go_but_never_the_newest(settings, dumps):
    settings.DUMP_KEEP_DAYS = 90
    dumps.mkdir(parents=True)
    today = date(2026, 12, 4)
    old = _fake_snapshot(dumps, today - timedelta(days=91), 1)
    kept = _fake_snapshot(dumps, today - timedelta(days=90), 2)
    new = _fake_snapshot(dumps, today, 3)
    assert snapshot.prune(dumps, today=today) == [old]
    assert [s.name for s in snapshot.snapshots(dumps)] == [new, kept]
    # Alone and old, the newest stays: /data/ is never emptied by age.
    for name in (kept, new):
        for path in dumps.glob(f"{name}*"):
            path.unlink()
    lone = _fake_snapshot(dumps, today - timedelta(days=400), 4)
    assert snapshot.prune(dumps, today=today) == []
    assert [s.name for s in snapshot.snapshots(dumps)] == [lone]


def test_a_file_without_its_checksum_or_being_written_is_not_listed(dumps):
    dumps.mkdir(parents=True)
    name = _fake_snapshot(dumps, date(2026, 12, 1), 7)
    (dumps / f"{name}.csv.zip.sha256").unlink()
    (dumps / ".gpucatalog-2026-12-02-v8.json.gz.partial").write_bytes(b"x")
    (dumps / "notes.txt").write_text("x")
    assert snapshot.snapshots(dumps) == []


def test_the_data_page_lists_each_file_with_its_size_checksum_and_the_licence(
    client, shipped, dumps
):
    published, _ = snapshot.publish()
    for prefix in ("", "/zh-hans"):
        page = client.get(f"{prefix}/data/")
        assert page.status_code == 200
        body = page.content.decode()
        assert 'href="https://creativecommons.org/licenses/by/4.0/" rel="license"' in body
        for file in published.files:
            assert f'href="/data/{file.name}"' in body
            assert f'href="/data/{file.name}.sha256"' in body
            assert file.sha256 in body
    assert "数据下载" in client.get("/zh-hans/data/").content.decode()


def test_the_data_page_says_when_there_is_no_snapshot_yet(client, db, dumps):
    body = client.get("/data/").content.decode()
    assert "No snapshot has been written yet" in body


def test_a_file_downloads_with_its_type_and_its_checksum_verifies(client, shipped, dumps):
    published, _ = snapshot.publish()
    for file in published.files:
        response = client.get(f"/data/{file.name}")
        assert response.status_code == 200
        body = b"".join(response.streaming_content)
        expected = "application/gzip" if file.name.endswith(".gz") else "application/zip"
        assert response["Content-Type"] == expected
        assert "attachment" in response["Content-Disposition"]
        sidecar = client.get(f"/data/{file.name}.sha256")
        assert sidecar["Content-Type"] == "text/plain; charset=utf-8"
        digest = b"".join(sidecar.streaming_content).decode().split()[0]
        assert hashlib.sha256(body).hexdigest() == digest


@pytest.mark.parametrize(
    "name",
    [
        "gpucatalog-2026-12-04-v1.json.gz",  # well formed, not on disk
        "..%2Fsettings.py",
        "gpucatalog-2026-12-04-v1.json.gz%00.txt",
        ".gpucatalog-2026-12-04-v1.json.gz.partial",
        "notes.txt",
    ],
)
def test_a_name_that_is_not_a_snapshot_file_is_a_404(client, db, dumps, name):
    dumps.mkdir(parents=True)
    (dumps / "notes.txt").write_text("secret")
    (dumps / ".gpucatalog-2026-12-04-v1.json.gz.partial").write_bytes(b"x")
    assert client.get(f"/data/{name}").status_code == 404


def test_the_command_reports_the_files_and_a_second_run_writes_nothing(shipped, dumps):
    out = StringIO()
    call_command("publish_dump", stdout=out)
    assert ": written" in out.getvalue()
    assert ".json.gz" in out.getvalue()
    assert "sha256" in out.getvalue()
    out = StringIO()
    call_command("publish_dump", stdout=out)
    assert "already there, unchanged" in out.getvalue()


def test_the_command_fails_clearly_when_it_cannot_write(shipped, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    with pytest.raises(CommandError, match="could not write the dump"):
        call_command("publish_dump", dir=blocked / "dumps", stdout=StringIO())


def test_the_dump_rebuilds_the_apis_rows(client, shipped, dumps, settings):
    """A dump holds the rows the API served for its data version: the same objects, less the
    staleness flag (which depends on when the file is read)."""
    settings.SITE_URL = "https://gpucatalog.example"
    published, _ = snapshot.publish()
    dumped = {item["id"]: item for item in _json(dumps, published)["instances"]}
    served = client.get("/api/instances?page_size=200&sort=price_gpu_hour").json()["results"]
    assert served
    for row in served:
        for price in [row["price"], *row["prices"]]:
            if price:
                price.pop("is_stale")
        assert dumped[row["id"]] == row


def test_beat_publishes_the_dump_daily(settings):
    from gpucatalog.celery import app
    from providers import schedule

    entry = schedule.beat_schedule()["publish-dump"]
    assert entry["task"] == "providers.tasks.publish_dump"
    assert entry["schedule"] == timedelta(minutes=settings.DUMP_INTERVAL_MINUTES)
    app.loader.import_default_modules()
    assert "providers.tasks.publish_dump" in app.tasks


def test_the_task_writes_the_snapshot(shipped, dumps):
    from providers.tasks import publish_dump

    assert publish_dump().endswith(": written")
    assert publish_dump().endswith(": already there")


def test_a_file_name_with_anything_after_it_is_not_a_snapshot_file():
    name = "gpucatalog-2026-12-04-101500000000-v3.json.gz"
    assert snapshot.FILE_RE.fullmatch(name)
    assert snapshot.FILE_RE.fullmatch("gpucatalog-2026-12-04-v3.json.gz.sha256")  # older names
    for odd in (name + "\n", name + "/", "../" + name, name + ".txt"):
        assert not snapshot.FILE_RE.fullmatch(odd)
