"""Ingest: 100,000 prices through the one writer against a hand-written COPY + merge (item 3).

    .venv/bin/python -m bench.ingest [--quick] [--rows 100000]

A benchmark-only provider (`benchingest`, its instance types hidden so no page lists them) gets
100,000 offers (instance x region x kind x term) three times over, by each method in turn,
alternating so that drift hits both alike:

- cold: every offer new (100,000 offers and 100,000 history rows written);
- changed: every price 5% up (100,000 updates, 100,000 history rows);
- unchanged: the same snapshot again (nothing but last-seen times should change).

`offerings.writer.upsert_offers(run, batch)` (the production path, timed from the
ScrapeBatch to the committed run) is compared with the floor: COPY of the same rows into a
temporary staging table plus one hand-written `INSERT ... ON CONFLICT` that resolves ids, prices
per GPU-hour, merges the offers and appends history where the price changed, all in one
statement. Ratio = baseline time / upsert time (1.0 = as fast as the floor; target >= 0.5).
Then the unchanged snapshot re-ingested through upsert_offers must write zero history rows.
Everything the benchmark wrote is deleted at the end.
"""

from __future__ import annotations

import sys
import time
from decimal import Decimal
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Report, median, quick_mode, setup_django, spread

SLUG = "benchingest"
KINDS = [("on-demand", 0), ("spot", 0), ("reserved", 12), ("reserved", 36)]
GEOS = ["na", "eu", "asia", "oc", "sa"]


def shape(rows: int) -> tuple[int, int]:
    """Instance types and regions giving `rows` offers with four kinds each."""
    regions = 25
    per_region = regions * len(KINDS)
    return -(-rows // per_region), regions


def delete_everything(connection) -> None:
    """Remove the benchmark provider and all it owns (raw SQL: the ORM's cascade is slow)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM offerings_provider WHERE slug = %s", [SLUG])
        row = cursor.fetchone()
        if row is None:
            return
        pid = row[0]
        instances = "SELECT id FROM offerings_instancetype WHERE provider_id = %s"
        offers = f"SELECT id FROM offerings_offer WHERE instance_id IN ({instances})"
        cursor.execute(
            f"DELETE FROM offerings_priceobservation WHERE offer_id IN ({offers})", [pid]
        )
        cursor.execute(f"DELETE FROM offerings_offer WHERE instance_id IN ({instances})", [pid])
        cursor.execute(
            "UPDATE offerings_priceobservation SET run_id = NULL WHERE run_id IN "
            "(SELECT id FROM offerings_scraperun WHERE provider_id = %s)",
            [pid],
        )
        for table in ("offerings_scraperun", "offerings_skureview"):
            cursor.execute(f"DELETE FROM {table} WHERE provider_id = %s", [pid])
        cursor.execute(f"DELETE FROM offerings_gpulink WHERE instance_id IN ({instances})", [pid])
        cursor.execute(f"DELETE FROM offerings_fabric WHERE instance_id IN ({instances})", [pid])
        cursor.execute("DELETE FROM offerings_instancetype WHERE provider_id = %s", [pid])
        cursor.execute("DELETE FROM offerings_region WHERE provider_id = %s", [pid])
        cursor.execute("DELETE FROM offerings_provider WHERE id = %s", [pid])


def reset_offers(connection, provider_id: int) -> None:
    """Back to no offers, no history and no runs for the provider; vacuumed, as before."""
    with connection.cursor() as cursor:
        instances = "SELECT id FROM offerings_instancetype WHERE provider_id = %s"
        offers = f"SELECT id FROM offerings_offer WHERE instance_id IN ({instances})"
        cursor.execute(
            f"DELETE FROM offerings_priceobservation WHERE offer_id IN ({offers})", [provider_id]
        )
        cursor.execute(
            f"DELETE FROM offerings_offer WHERE instance_id IN ({instances})", [provider_id]
        )
        cursor.execute("DELETE FROM offerings_scraperun WHERE provider_id = %s", [provider_id])
        cursor.execute("VACUUM ANALYZE offerings_offer, offerings_priceobservation")


def make_provider(rows: int):
    from offerings.models import GpuModel, InstanceType, Provider, Region

    n_instances, n_regions = shape(rows)
    provider = Provider.objects.create(
        slug=SLUG,
        name="Benchmark ingest provider",
        website="https://benchingest.example.com/",
        kind="specialist",
        source_url="https://benchingest.example.com/about",
    )
    Region.objects.bulk_create(
        Region(
            provider=provider, code=f"bench-{i:02d}", name=f"Bench {i:02d}", geo=GEOS[i % len(GEOS)]
        )
        for i in range(n_regions)
    )
    gpu = GpuModel.objects.filter(slug="h100-sxm").first() or GpuModel.objects.first()
    InstanceType.objects.bulk_create(
        InstanceType(
            provider=provider,
            name=f"bench.{i:05d}",
            slug=f"bench-{i:05d}",
            gpu=gpu,
            gpu_count=8,
            is_hidden=True,
            source_url="https://benchingest.example.com/docs",
        )
        for i in range(n_instances)
    )
    return provider


def make_batch(rows: int, factor: Decimal):
    """A ScrapeBatch of exactly `rows` offers, as a scraper would hand it over."""
    from offerings.schemas import ScrapeBatch, ScrapedOffer

    n_instances, n_regions = shape(rows)
    offers = []
    for i in range(n_instances):
        base = Decimal(16) + Decimal(i % 97) / 10
        for r in range(n_regions):
            for kind, term in KINDS:
                if len(offers) == rows:
                    break
                price = (
                    base
                    * (Decimal("1.1") if r % 3 else 1)
                    * {0: 1, 12: Decimal("0.7"), 36: Decimal("0.5")}[term]
                )
                if kind == "spot":
                    price *= Decimal("0.45")
                offers.append(
                    ScrapedOffer(
                        sku=f"bench.{i:05d}",
                        instance_slug=f"bench-{i:05d}",
                        region=f"bench-{r:02d}",
                        region_name=f"Bench {r:02d}",
                        geo=GEOS[r % len(GEOS)],
                        kind=kind,
                        term_months=term,
                        price_per_hour=(price * factor).quantize(Decimal("0.0001")),
                        currency="USD",
                        available=bool((i + r) % 5),
                        source_url=f"https://benchingest.example.com/pricing?sku=bench.{i:05d}",
                    )
                )
    return ScrapeBatch(offers=tuple(offers))


MERGE = """
WITH src AS (
    SELECT i.id AS instance_id, r.id AS region_id, s.kind, s.term_months, s.price_per_hour,
           s.currency, round(s.price_per_hour / i.gpu_count, 6) AS per_gpu, s.available,
           s.source_url,
           (o.id IS NULL OR o.price_per_hour <> s.price_per_hour OR o.currency <> s.currency)
               AS changed
    FROM bench_stage s
    JOIN offerings_instancetype i ON i.provider_id = %(provider)s AND i.slug = s.instance_slug
    JOIN offerings_region r ON r.provider_id = %(provider)s AND r.code = s.region
    LEFT JOIN offerings_offer o ON o.instance_id = i.id AND o.region_id = r.id
        AND o.kind = s.kind AND o.term_months = s.term_months
), merged AS (
    INSERT INTO offerings_offer AS o (
        instance_id, region_id, kind, term_months, price_per_hour, currency,
        price_per_gpu_hour_usd, exchange_rate_date, available, observed_at, first_seen_at,
        last_seen_at, missing_runs, is_active, origin, source_url, source, basis, locked_fields)
    SELECT instance_id, region_id, kind, term_months, price_per_hour, currency, per_gpu, NULL,
           available, %(now)s, %(now)s, %(now)s, 0, true, 'scraper', source_url, '', 'provider',
           '{}'
    FROM src
    ON CONFLICT ON CONSTRAINT offer_natural_key DO UPDATE SET
        price_per_hour = EXCLUDED.price_per_hour,
        currency = EXCLUDED.currency,
        price_per_gpu_hour_usd = EXCLUDED.price_per_gpu_hour_usd,
        available = EXCLUDED.available,
        observed_at = EXCLUDED.observed_at,
        last_seen_at = EXCLUDED.last_seen_at,
        source_url = EXCLUDED.source_url,
        missing_runs = 0,
        is_active = true
    RETURNING o.id, o.instance_id, o.region_id, o.kind, o.term_months, o.price_per_hour,
              o.currency
)
INSERT INTO offerings_priceobservation (offer_id, price_per_hour, currency, observed_at, run_id)
SELECT m.id, m.price_per_hour, m.currency, %(now)s, NULL
FROM merged m JOIN src USING (instance_id, region_id, kind, term_months)
WHERE src.changed
"""


def baseline(connection, provider_id: int, batch) -> float:
    """COPY into a staging table plus one merge statement, from the same ScrapeBatch."""
    from django.db import transaction
    from django.utils import timezone

    start = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """CREATE TEMPORARY TABLE bench_stage (
                   instance_slug varchar(120) NOT NULL, region varchar(64) NOT NULL,
                   kind varchar(10) NOT NULL, term_months smallint NOT NULL,
                   price_per_hour numeric(14, 6) NOT NULL, currency varchar(3) NOT NULL,
                   available boolean, source_url varchar(500) NOT NULL
               ) ON COMMIT DROP"""
        )
        with cursor.cursor.copy(
            "COPY bench_stage (instance_slug, region, kind, term_months, price_per_hour, "
            "currency, available, source_url) FROM STDIN"
        ) as copy:
            for o in batch.offers:
                copy.write_row(
                    (
                        o.instance_slug,
                        o.region,
                        o.kind,
                        o.term_months,
                        o.price_per_hour,
                        o.currency,
                        o.available,
                        str(o.source_url),
                    )
                )
        # Planned by hand, as one would for a bulk statement: statistics for the staging table,
        # and hash joins (a CTE's row estimate is a guess; a nested loop over 100k x 100k rows
        # never finishes). A runaway plan fails the run instead of hanging it.
        cursor.execute("ANALYZE bench_stage")
        cursor.execute("SET LOCAL enable_nestloop = off")
        cursor.execute("SET LOCAL statement_timeout = '300s'")
        cursor.execute(MERGE, {"provider": provider_id, "now": timezone.now()})
    return time.perf_counter() - start


def through_upsert(provider, batch):
    from offerings import writer

    start = time.perf_counter()
    run = writer.start_scrape_run(provider, trigger="bench")
    run = writer.upsert_offers(run, batch)
    elapsed = time.perf_counter() - start
    if run.status != "succeeded":
        raise RuntimeError(f"upsert_offers ended {run.status}: {run.error_messages}")
    return elapsed, run


def history_rows(connection, provider_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM offerings_priceobservation h JOIN offerings_offer o "
            "ON o.id = h.offer_id JOIN offerings_instancetype i ON i.id = o.instance_id "
            "WHERE i.provider_id = %s",
            [provider_id],
        )
        return cursor.fetchone()[0]


def offer_fingerprint(connection, provider_id: int) -> tuple:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), sum(o.price_per_hour), md5(string_agg(o.id::text || ':' || "
            "o.price_per_hour::text || o.currency || coalesce(o.available::text, '') || "
            "o.price_per_gpu_hour_usd::text, ',' ORDER BY o.id)) "
            "FROM offerings_offer o JOIN offerings_instancetype i ON i.id = o.instance_id "
            "WHERE i.provider_id = %s",
            [provider_id],
        )
        return cursor.fetchone()


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    quick = quick_mode(args)
    rows = int(args[args.index("--rows") + 1]) if "--rows" in args else 100_000
    repeats = 1 if quick else 2
    print(f"== ingest: {rows:,} prices, upsert_offers vs COPY + one merge", flush=True)
    setup_django()
    from django.db import connection

    report = Report("ingest")
    delete_everything(connection)
    provider = make_provider(rows)
    try:
        build_start = time.perf_counter()
        batches = {
            "cold": make_batch(rows, Decimal(1)),
            "changed": make_batch(rows, Decimal("1.05")),
        }
        batches["unchanged"] = batches["changed"]
        build = (time.perf_counter() - build_start) / 2
        report.info(
            "building one ScrapeBatch of validated ScrapedOffers (not timed below)",
            f"{build:.2f} s",
            "what a scraper spends on pydantic, for scale",
        )
        times: dict[str, dict[str, list[float]]] = {
            s: {"upsert": [], "baseline": []} for s in batches
        }
        runs = {}
        for repeat in range(repeats):
            order = ["baseline", "upsert"] if repeat % 2 == 0 else ["upsert", "baseline"]
            for method in order:
                reset_offers(connection, provider.pk)
                for scenario, batch in batches.items():
                    if method == "upsert":
                        elapsed, run = through_upsert(provider, batch)
                        runs[scenario] = run
                    else:
                        elapsed = baseline(connection, provider.pk, batch)
                    times[scenario][method].append(elapsed)
                    print(
                        f"    repeat {repeat + 1} {method:<8} {scenario:<9} {elapsed:6.2f} s",
                        flush=True,
                    )
        for scenario, by_method in times.items():
            upsert, floor = median(by_method["upsert"]), median(by_method["baseline"])
            ratio = floor / upsert
            report.add(
                f"ingest {rows:,} prices, {scenario}: speed of upsert_offers / COPY + one merge",
                f"{ratio:.2f}x (upsert {upsert:.2f} s {spread(by_method['upsert'])}, "
                f"COPY + merge {floor:.2f} s {spread(by_method['baseline'])}; "
                f"{rows / upsert:,.0f} rows/s)",
                ">= 0.5x",
                ratio >= 0.5,
            )
        run = runs["changed"]
        report.info(
            "upsert_offers counts, changed snapshot",
            f"created {run.created}, updated {run.updated}, unchanged {run.unchanged}",
        )

        # The state now: the changed snapshot ingested twice through upsert_offers (the last
        # method of the last repeat may be the baseline, so make sure of it).
        reset_offers(connection, provider.pk)
        through_upsert(provider, batches["changed"])
        before_history = history_rows(connection, provider.pk)
        before_offers = offer_fingerprint(connection, provider.pk)
        elapsed, run = through_upsert(provider, batches["unchanged"])
        written = history_rows(connection, provider.pk) - before_history
        after_offers = offer_fingerprint(connection, provider.pk)
        report.add(
            f"unchanged snapshot of {rows:,} re-ingested: price-history rows written",
            f"{written:,}",
            "0",
            written == 0,
            f"run: created {run.created}, updated {run.updated}, unchanged {run.unchanged}; "
            f"{elapsed:.2f} s",
        )
        report.add(
            "unchanged snapshot: offers created or with a changed price, currency or availability",
            f"{after_offers[0] - before_offers[0]} created, "
            f"{'none changed' if after_offers == before_offers else 'values changed'}",
            "0 created, none changed",
            after_offers == before_offers,
        )
        report.details["times_s"] = times
    finally:
        delete_everything(connection)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE offerings_offer, offerings_priceobservation")
    report.save()
    return 0 if all(f.passed is not False for f in report.figures) else 1


if __name__ == "__main__":
    sys.exit(main())
