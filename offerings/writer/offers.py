"""Scraped offers: the one set-based upsert (staged with COPY, merged on the natural key, history
appended where the price changed, missing offers retired), the review queue and new regions."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from offerings.models import (
    InstanceType,
    Offer,
    PriceCheck,
    PriceObservation,
    Provider,
    Region,
    ScrapeRun,
    SkuReview,
)
from offerings.money import GPU_HOUR_PLACES, RateTable, gpu_hour_usd
from offerings.schemas import ScrapeBatch
from offerings.writer.runs import last_good_run
from offerings.writer.standing import held_sql, scraped_rank

# An offer a good run did not return is retired only after this many consecutive good runs.
RETIRE_AFTER_MISSING_RUNS = 2
# Per GPU-hour in USD: a scraped price outside this range is a parsing or data error.
MIN_GPU_HOUR_USD = Decimal("0.01")
MAX_GPU_HOUR_USD = Decimal("500")
# The largest value Offer.price_per_hour (max_digits 14, 6 places) can hold.
MAX_PRICE_PER_HOUR = Decimal("99999999.999999")
# Rejected rows stored on one run; the count stays exact beyond it.
MAX_STORED_REJECTIONS = 5000
_LOCK_NAMESPACE = 0x6770  # pg_advisory_xact_lock(namespace, provider id): one refresh at a time


@dataclass
class _Prepared:
    """Scraped rows checked against the catalog, ready to stage."""

    rows: dict[tuple, dict] = field(default_factory=dict)
    protected: set[tuple] = field(default_factory=set)
    rejected: list[dict] = field(default_factory=list)
    review: dict[str, dict] = field(default_factory=dict)
    regions: dict[str, tuple[str, str]] = field(default_factory=dict)


def _rejection(row, reason: str) -> dict:
    named = {"provider": row.provider} if row.provider else {}
    return {
        "sku": row.sku,
        **named,
        "region": row.region,
        "kind": row.kind,
        "term_months": row.term_months,
        "reason": reason,
    }


def _prepare(provider: Provider, batch: ScrapeBatch, rates: RateTable, now) -> _Prepared:
    """Map rows to curated instance types, price them in USD and refuse what is implausible."""
    prepared = _Prepared()
    rows = InstanceType.objects.filter(provider=provider).values_list("slug", "pk", "gpu_count")
    instances = {slug: (pk, gpu_count) for slug, pk, gpu_count in rows}
    by_id = {pk: slug for slug, (pk, _) in instances.items()}
    # A curator's mapping in the review queue wins over the scraper's own table.
    curated_mapping = {
        sku: by_id[target]
        for sku, target in SkuReview.objects.filter(
            provider=provider, status=SkuReview.Status.MAPPED
        ).values_list("sku", "mapped_to")
        if target in by_id
    }
    for row in batch.rejected:
        unnamed = set() if row.provider else {"provider"}
        prepared.rejected.append(row.model_dump(exclude={"instance_slug", *unnamed}))
        slug = curated_mapping.get(row.sku, row.instance_slug)
        if slug in instances and row.region and row.kind:
            key = (instances[slug][0], row.region, row.kind, row.term_months)
            prepared.protected.add(key)
    conflicts: set[tuple] = set()
    for row in batch.offers:
        slug = curated_mapping.get(row.sku, row.instance_slug)
        if slug is None or slug not in instances:
            note = {} if slug is None else {"no_curated_instance_type": slug}
            entry = prepared.review.setdefault(row.sku, {**row.parsed, **note, "prices": []})
            entry["prices"].append(
                {
                    "region": row.region,
                    "kind": row.kind,
                    "term_months": row.term_months,
                    "price_per_hour": str(row.price_per_hour),
                    "currency": row.currency,
                }
            )
            continue
        instance_id, gpu_count = instances[slug]
        key = (instance_id, row.region, row.kind, row.term_months)
        hourly = row.price_per_hour.quantize(GPU_HOUR_PLACES, rounding=ROUND_HALF_EVEN)
        try:
            if hourly > MAX_PRICE_PER_HOUR:
                raise ValueError(f"price {row.price_per_hour} per hour is too large to store")
            per_gpu, rate = gpu_hour_usd(hourly, row.currency, gpu_count, rates)
            if not MIN_GPU_HOUR_USD <= per_gpu <= MAX_GPU_HOUR_USD:
                raise ValueError(
                    f"implausible price: {per_gpu} USD per GPU-hour ({row.price_per_hour} "
                    f"{row.currency}/h for {gpu_count} GPUs) is outside "
                    f"{MIN_GPU_HOUR_USD}-{MAX_GPU_HOUR_USD}"
                )
        except ValueError as exc:  # UnknownCurrency is a ValueError too
            prepared.rejected.append(_rejection(row, str(exc)))
            prepared.protected.add(key)
            continue
        if key in conflicts:
            prepared.rejected.append(_rejection(row, "conflicting prices for the same offer"))
            continue
        staged = {
            "instance_id": instance_id,
            "region": row.region,
            "kind": row.kind,
            "term_months": row.term_months,
            "price_per_hour": hourly,
            "currency": row.currency,
            "price_per_gpu_hour_usd": per_gpu,
            "exchange_rate_date": rate.rate_date if rate else None,
            "available": row.available,
            "source_url": str(row.source_url),
            "observed_at": row.observed_at,
            "sku": row.sku,
        }
        previous = prepared.rows.get(key)
        if previous is None:
            prepared.rows[key] = staged
            prepared.regions.setdefault(row.region, (row.region_name, row.geo))
        elif (previous["price_per_hour"], previous["currency"]) == (hourly, row.currency):
            prepared.rejected.append(
                _rejection(row, "duplicate of an earlier row with the same price; ignored")
            )
        else:
            # Two different prices for one offer: trust neither, keep the stored price.
            del prepared.rows[key]
            conflicts.add(key)
            prepared.protected.add(key)
            prepared.rejected.append(
                _rejection(
                    row,
                    f"conflicting prices for the same offer: {previous['price_per_hour']} "
                    f"{previous['currency']} and {hourly} {row.currency}; stored price kept",
                )
            )
            prepared.rejected.append(
                {**_rejection(row, "conflicting prices for the same offer"), "sku": previous["sku"]}
            )
    return prepared


_STAGE_COLUMNS = (
    "instance_id",
    "region_id",
    "kind",
    "term_months",
    "price_per_hour",
    "currency",
    "price_per_gpu_hour_usd",
    "exchange_rate_date",
    "available",
    "source_url",
    "observed_at",
)


def _stage(cursor, rows: Iterable[tuple], protected: Iterable[tuple]) -> None:
    """Load the run's rows into temporary tables with COPY."""
    cursor.execute("DROP TABLE IF EXISTS pg_temp.offer_stage, pg_temp.offer_protected")
    cursor.execute(
        """
        CREATE TEMPORARY TABLE offer_stage (
            instance_id bigint NOT NULL,
            region_id bigint NOT NULL,
            kind varchar(20) NOT NULL,
            term_months smallint NOT NULL,
            price_per_hour numeric(14, 6) NOT NULL,
            currency varchar(3) NOT NULL,
            price_per_gpu_hour_usd numeric(14, 6),
            exchange_rate_date date,
            available boolean,
            source_url varchar(500) NOT NULL,
            observed_at timestamptz,
            offer_id bigint,
            outcome varchar(10) NOT NULL DEFAULT 'created',
            price_changed boolean NOT NULL DEFAULT true,
            PRIMARY KEY (instance_id, region_id, kind, term_months)
        ) ON COMMIT DROP
        """
    )
    cursor.execute(
        """
        CREATE TEMPORARY TABLE offer_protected (
            instance_id bigint NOT NULL,
            region_id bigint NOT NULL,
            kind varchar(20) NOT NULL,
            term_months smallint NOT NULL
        ) ON COMMIT DROP
        """
    )
    copy_sql = f"COPY offer_stage ({', '.join(_STAGE_COLUMNS)}) FROM STDIN"
    with cursor.cursor.copy(copy_sql) as copy:
        for row in rows:
            copy.write_row(row)
    with cursor.cursor.copy(
        "COPY offer_protected (instance_id, region_id, kind, term_months) FROM STDIN"
    ) as copy:
        for row in protected:
            copy.write_row(row)


_PRICE_LOCKED = "o.locked_fields && ARRAY['price_per_hour', 'currency']::varchar(64)[]"
# Which reading stands (offerings/writer/standing.py): where the stored reading holds against
# this run's, the offer keeps its price, source and date.
_HELD_STAGED = held_sql("s.observed_at")
_HELD_MERGED = held_sql("EXCLUDED.observed_at")
# Scraped prices are observed when the run read them; a replay passes its recording's date.
LIVE = object()


def _merge(
    cursor, provider: Provider | None, run: ScrapeRun, now, source: str = ""
) -> dict[str, int]:
    """Classify the staged rows, merge them on the natural key, append history, retire.

    `source` is "" for a provider's own run, whose offers are that provider's; a price source's
    run passes its slug and `provider` None: it retires only its own offers, of any provider.
    """
    offer = Offer._meta.db_table
    history = PriceObservation._meta.db_table
    instance = InstanceType._meta.db_table
    held = _move_foreign_rows_to_checks(cursor, run, now, source) if source else 0
    # 1. Classify against what is stored: what a locked field keeps is not a change.
    cursor.execute(
        f"""
        UPDATE offer_stage s SET
            offer_id = o.id,
            price_changed = NOT ({_PRICE_LOCKED}) AND NOT {_HELD_STAGED}
                AND (o.price_per_hour <> s.price_per_hour OR o.currency <> s.currency),
            outcome = CASE WHEN
                (NOT ({_PRICE_LOCKED}) AND NOT {_HELD_STAGED} AND (
                    o.price_per_hour <> s.price_per_hour OR o.currency <> s.currency
                    OR o.price_per_gpu_hour_usd IS DISTINCT FROM s.price_per_gpu_hour_usd
                    OR o.exchange_rate_date IS DISTINCT FROM s.exchange_rate_date
                    OR o.source_url <> s.source_url OR o.origin <> 'scraper'
                    OR o.source <> %(source)s))
                OR (NOT 'available' = ANY(o.locked_fields)
                    AND o.available IS DISTINCT FROM s.available)
                OR (NOT 'is_active' = ANY(o.locked_fields) AND NOT o.is_active)
            THEN 'updated' ELSE 'unchanged' END
        FROM {offer} o
        WHERE o.instance_id = s.instance_id AND o.region_id = s.region_id
          AND o.kind = s.kind AND o.term_months = s.term_months
        """,
        {"source": source, "rank": scraped_rank(source)},
    )
    # 2. The merge: one INSERT ... ON CONFLICT on the natural key, sparing locked fields.
    cursor.execute(
        f"""
        INSERT INTO {offer} AS o (
            instance_id, region_id, kind, term_months, price_per_hour, currency,
            price_per_gpu_hour_usd, exchange_rate_date, available, observed_at, first_seen_at,
            last_seen_at, missing_runs, is_active, origin, source, source_url, basis,
            locked_fields
        )
        SELECT instance_id, region_id, kind, term_months, price_per_hour, currency,
               price_per_gpu_hour_usd, exchange_rate_date, available, observed_at, %(now)s,
               %(now)s, 0, true, 'scraper', %(source)s, source_url, %(basis)s, '{{}}'
        FROM offer_stage
        ON CONFLICT ON CONSTRAINT offer_natural_key DO UPDATE SET
            price_per_hour = CASE WHEN {_PRICE_LOCKED} OR {_HELD_MERGED} THEN o.price_per_hour
                ELSE EXCLUDED.price_per_hour END,
            currency = CASE WHEN {_PRICE_LOCKED} OR {_HELD_MERGED} THEN o.currency ELSE EXCLUDED.currency END,
            price_per_gpu_hour_usd = CASE WHEN {_PRICE_LOCKED} OR {_HELD_MERGED} THEN o.price_per_gpu_hour_usd
                ELSE EXCLUDED.price_per_gpu_hour_usd END,
            exchange_rate_date = CASE WHEN {_PRICE_LOCKED} OR {_HELD_MERGED} THEN o.exchange_rate_date
                ELSE EXCLUDED.exchange_rate_date END,
            source_url = CASE WHEN {_PRICE_LOCKED} OR {_HELD_MERGED} THEN o.source_url
                ELSE EXCLUDED.source_url END,
            origin = CASE WHEN {_PRICE_LOCKED} OR {_HELD_MERGED} THEN o.origin ELSE EXCLUDED.origin END,
            source = CASE WHEN {_PRICE_LOCKED} OR {_HELD_MERGED} THEN o.source ELSE EXCLUDED.source END,
            basis = CASE WHEN {_PRICE_LOCKED} OR {_HELD_MERGED} THEN o.basis
                -- a curator's call on who states the price stays while the same writer's
                -- readings follow; another writer's reading comes with its own basis
                WHEN 'basis' = ANY(o.locked_fields) AND o.source = EXCLUDED.source
                    AND o.origin = EXCLUDED.origin THEN o.basis
                ELSE EXCLUDED.basis END,
            observed_at = CASE WHEN {_PRICE_LOCKED} OR {_HELD_MERGED} THEN o.observed_at
                ELSE EXCLUDED.observed_at END,
            available = CASE WHEN 'available' = ANY(o.locked_fields) THEN o.available
                ELSE EXCLUDED.available END,
            is_active = CASE WHEN 'is_active' = ANY(o.locked_fields) THEN o.is_active
                ELSE true END,
            last_seen_at = GREATEST(o.last_seen_at, EXCLUDED.last_seen_at),
            missing_runs = 0
        """,
        # The provider's own price data is the provider's statement; a price source's is a
        # third party's.
        {
            "now": now,
            "source": source,
            "rank": scraped_rank(source),
            "basis": "third-party" if source else "provider",
        },
    )
    # 3. History: a row only where the stored price changed (new offers included).
    cursor.execute(
        f"""
        INSERT INTO {history} (offer_id, price_per_hour, currency, observed_at, run_id)
        SELECT o.id, o.price_per_hour, o.currency, s.observed_at, %(run)s
        FROM offer_stage s
        JOIN {offer} o ON o.instance_id = s.instance_id AND o.region_id = s.region_id
                      AND o.kind = s.kind AND o.term_months = s.term_months
        WHERE s.price_changed
        ON CONFLICT ON CONSTRAINT priceobservation_unique_time DO NOTHING
        """,
        {"run": run.pk},
    )
    # 4. Retirement: scraped offers of this source (of this provider, for its own run) that
    # this good run did not return.
    cursor.execute(
        f"""
        UPDATE {offer} o SET
            missing_runs = o.missing_runs + 1,
            is_active = o.missing_runs + 1 < %(limit)s
        FROM {instance} i
        WHERE i.id = o.instance_id
          AND (%(provider)s::bigint IS NULL OR i.provider_id = %(provider)s::bigint)
          AND o.is_active AND o.origin = 'scraper' AND o.source = %(source)s
          AND NOT 'is_active' = ANY(o.locked_fields)
          AND NOT EXISTS (
              SELECT 1 FROM offer_stage s WHERE s.instance_id = o.instance_id
                AND s.region_id = o.region_id AND s.kind = o.kind
                AND s.term_months = o.term_months)
          AND NOT EXISTS (
              SELECT 1 FROM offer_protected p WHERE p.instance_id = o.instance_id
                AND p.region_id = o.region_id AND p.kind = o.kind
                AND p.term_months = o.term_months)
        RETURNING o.is_active
        """,
        {
            "limit": RETIRE_AFTER_MISSING_RUNS,
            "provider": provider.pk if provider is not None else None,
            "source": source,
        },
    )
    retired = sum(1 for (active,) in cursor.fetchall() if not active)
    cursor.execute(
        f"""
        UPDATE {instance} SET last_seen_at = %(now)s
        WHERE id IN (SELECT DISTINCT instance_id FROM offer_stage)
          AND (last_seen_at IS NULL OR last_seen_at < %(now)s)
        """,
        {"now": now},
    )
    cursor.execute("SELECT outcome, count(*) FROM offer_stage GROUP BY outcome")
    counts = dict(cursor.fetchall())
    cursor.execute("DROP TABLE pg_temp.offer_stage, pg_temp.offer_protected")
    return {
        "created": counts.get("created", 0),
        "updated": counts.get("updated", 0),
        "unchanged": counts.get("unchanged", 0) + held,
        "retired": retired,
    }


def _move_foreign_rows_to_checks(cursor, run: ScrapeRun, now, source: str) -> int:
    """A price source's reading of an offer another writer holds (the provider's scraper, the
    curated catalog, a curator) and that does not replace it (a lock, or the rule of
    `standing`) becomes a check, and the row leaves the stage. Returns how many were held back."""
    offer = Offer._meta.db_table
    check = PriceCheck._meta.db_table
    cursor.execute(
        f"""
        INSERT INTO {check} AS c (offer_id, source, price_per_hour, currency, observed_at,
                                  source_url, run_id, read_at)
        SELECT o.id, %(source)s, s.price_per_hour, s.currency, s.observed_at, s.source_url,
               %(run)s, %(now)s
        FROM offer_stage s
        JOIN {offer} o ON o.instance_id = s.instance_id AND o.region_id = s.region_id
                      AND o.kind = s.kind AND o.term_months = s.term_months
        WHERE o.is_active AND (o.source <> %(source)s OR o.origin <> 'scraper')
          AND ({_PRICE_LOCKED} OR {_HELD_STAGED})
        ON CONFLICT ON CONSTRAINT pricecheck_one_per_source DO UPDATE SET
            price_per_hour = EXCLUDED.price_per_hour, currency = EXCLUDED.currency,
            observed_at = EXCLUDED.observed_at, source_url = EXCLUDED.source_url,
            run_id = EXCLUDED.run_id, read_at = EXCLUDED.read_at
        """,
        {"source": source, "rank": scraped_rank(source), "run": run.pk, "now": now},
    )
    cursor.execute(
        f"""
        DELETE FROM offer_stage s USING {offer} o
        WHERE o.instance_id = s.instance_id AND o.region_id = s.region_id
          AND o.kind = s.kind AND o.term_months = s.term_months
          AND o.is_active AND (o.source <> %(source)s OR o.origin <> 'scraper')
          AND ({_PRICE_LOCKED} OR {_HELD_STAGED})
        """,
        {"source": source, "rank": scraped_rank(source)},
    )
    return cursor.rowcount


def _queue_for_review(cursor, provider: Provider, review: Mapping[str, dict], now) -> None:
    """Put unmapped SKUs in the curators' review queue, or note that they were seen again."""
    if not review:
        return
    table = SkuReview._meta.db_table
    values = [(provider.pk, sku, json.dumps(parsed, default=str)) for sku, parsed in review.items()]
    cursor.executemany(
        f"""
        INSERT INTO {table} AS r (provider_id, sku, parsed, status, first_seen_at, last_seen_at,
                                  times_seen)
        VALUES (%s, %s, %s::jsonb, 'new', %s, %s, 1)
        ON CONFLICT ON CONSTRAINT skureview_unique_sku DO UPDATE SET
            parsed = EXCLUDED.parsed,
            last_seen_at = EXCLUDED.last_seen_at,
            times_seen = r.times_seen + 1
        """,
        [(*v, now, now) for v in values],
    )


def short_parts(parts: dict[str, int], previous: dict[str, int], ratio: Decimal) -> list[str]:
    """Each part of this run with fewer rows than `ratio` of the same part last time, named with
    both counts. A part the previous run did not read is new, not short."""
    return [
        f"{name}: {parts.get(name, 0)} row(s) read, {count} last time"
        for name, count in sorted(previous.items())
        if name in parts and parts[name] < ratio * count
    ]


def upsert_offers(
    run: ScrapeRun,
    batch: ScrapeBatch,
    *,
    min_row_ratio: Decimal | None = None,
    now=None,
    observed_at=LIVE,
) -> ScrapeRun:
    """Write one run's scraped offers in one transaction and close its run record.

    Rows are staged with COPY and merged on the natural key (instance, region, kind, term) in
    one statement. A price-history row is appended only where the price changed, so an unchanged
    snapshot writes none and only advances last-seen times. Locked fields are never written.
    SKUs that map to no curated instance type go to the review queue. An offer missing from
    two consecutive good runs is retired. A run returning fewer rows than `min_row_ratio` of the
    last good run, no rows at all, or nothing but rejected rows changes nothing and is closed
    as rejected or failed. `fetched` = created + updated + unchanged + rejected + SKUs' rows
    queued for review.

    A price source's run (its provider row is of kind `price-source`) writes offers of the
    providers its rows name (`ScrapedOffer.provider`), marked as its own: it writes an offer
    another writer holds only where its reading stands (`standing`: dated and newer), keeps
    its reading of the others as checks, retires only its own offers, and queues no SKU for
    review (the SKUs are the providers' own names).

    `observed_at` is when the prices were read at their source: the run's time for a live
    run; a replay passes its recording's date, or None when the recording shows none ("date
    unknown"). Which reading stands is `standing`'s rule: a price held from a later reading, or
    a dated one held against an undated reading, is kept, whichever writer holds it.
    """
    provider = run.provider
    source = provider.slug if provider.kind == Provider.Kind.PRICE_SOURCE else ""
    now = now or timezone.now()
    observed = now if observed_at is LIVE else observed_at
    ratio = settings.REFRESH_MIN_ROW_RATIO if min_row_ratio is None else min_row_ratio
    with transaction.atomic():
        targets = _targets(provider, batch, source)
        with connection.cursor() as cursor:
            for target in sorted(targets.values(), key=lambda t: t.pk):
                cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_NAMESPACE, target.pk])
        rates = RateTable()
        groups = [
            (target, _prepare(target, _rows_for(batch, target, source), rates, now))
            for target in targets.values()
        ]
        rejected = [row for _, prepared in groups for row in prepared.rejected]
        rejected += [
            {"sku": row.sku, "reason": f"provider {row.provider!r} is not in the catalog"}
            for row in (*batch.offers, *batch.rejected)
            if source and row.provider not in targets
        ]
        review = {sku: e for _, prepared in groups for sku, e in prepared.review.items()}
        queued = sum(len(entry["prices"]) for entry in review.values())
        run.fetched = len(batch.offers) + len(batch.rejected)
        run.parts = dict(batch.parts)
        run.rejected = len(rejected)
        run.rejected_rows = rejected[:MAX_STORED_REJECTIONS]
        if len(rejected) > MAX_STORED_REJECTIONS:
            run.rejected_rows.append(
                {"reason": f"... and {len(rejected) - MAX_STORED_REJECTIONS} more"}
            )
        run.warnings = [*run.warnings, *batch.warnings]
        if review:
            where = "were left out" if source else "went to the review queue"
            run.warnings.append(
                f"{len(review)} SKU(s) ({queued} row(s)) map to no curated instance "
                f"type and {where}: {', '.join(sorted(review)[:20])}"
            )
        run.finished_at = max(timezone.now(), run.started_at)
        previous = last_good_run(provider, exclude=run, replay_of=run.replay_of)
        reason = None
        if run.fetched == 0:
            reason = "the provider returned no offers; nothing changed"
            run.status = ScrapeRun.Status.FAILED
        elif previous is not None and (short := short_parts(run.parts, previous.parts, ratio)):
            reason = (
                f"row-count guard: {'; '.join(short)}, fewer than {ratio:.0%} of the last good "
                f"run (#{previous.pk}, {previous.started_at:%Y-%m-%d %H:%M} UTC); nothing changed"
            )
            run.status = ScrapeRun.Status.REJECTED
        elif previous is not None and run.fetched < ratio * previous.fetched:
            reason = (
                f"row-count guard: {run.fetched} row(s) fetched, fewer than {ratio:.0%} of the "
                f"{previous.fetched} in the last good run (#{previous.pk}, "
                f"{previous.started_at:%Y-%m-%d %H:%M} UTC); nothing changed"
            )
            run.status = ScrapeRun.Status.REJECTED
        elif not any(prepared.rows for _, prepared in groups) and not review:
            reason = f"all {run.fetched} row(s) were rejected; nothing changed"
            run.status = ScrapeRun.Status.FAILED
        if reason is not None:
            run.errors += 1
            run.error_messages = [*run.error_messages, reason]
            run.save()
            return run
        rows: list[tuple] = []
        protected: list[tuple] = []
        for target, prepared in groups:
            regions = _ensure_regions(target, prepared.regions)
            rows += [
                (
                    r["instance_id"],
                    regions[r["region"]],
                    r["kind"],
                    r["term_months"],
                    r["price_per_hour"],
                    r["currency"],
                    r["price_per_gpu_hour_usd"],
                    r["exchange_rate_date"],
                    r["available"],
                    r["source_url"],
                    r["observed_at"] if batch.dated else observed,
                )
                for r in prepared.rows.values()
            ]
            protected += [
                (instance_id, regions[code], kind, term)
                for instance_id, code, kind, term in prepared.protected
                if code in regions
            ]
        with connection.cursor() as cursor:
            _stage(cursor, rows, protected)
            counts = _merge(cursor, None if source else provider, run, now, source)
            if not source:
                _queue_for_review(cursor, provider, review, now)
        for name, value in counts.items():
            setattr(run, name, value)
        run.status = ScrapeRun.Status.SUCCEEDED
        run.save()
    return run


def _targets(provider: Provider, batch: ScrapeBatch, source: str) -> dict[str, Provider]:
    """The providers whose offers the run writes: its own, or those a price source's rows name."""
    if not source:
        return {provider.slug: provider}
    named = {row.provider for row in (*batch.offers, *batch.rejected)}
    found = Provider.objects.filter(slug__in=named).exclude(kind=Provider.Kind.PRICE_SOURCE)
    return {target.slug: target for target in found}


def _rows_for(batch: ScrapeBatch, target: Provider, source: str) -> ScrapeBatch:
    if not source:
        return batch
    return ScrapeBatch(
        offers=tuple(row for row in batch.offers if row.provider == target.slug),
        rejected=tuple(row for row in batch.rejected if row.provider == target.slug),
        dated=batch.dated,
    )


def _ensure_regions(provider: Provider, seen: Mapping[str, tuple[str, str]]) -> dict[str, int]:
    """Region ids by code, adding the regions a scraper reports for the first time."""
    known = dict(Region.objects.filter(provider=provider).values_list("code", "pk"))
    missing = [
        Region(provider=provider, code=code, name=name[:120], geo=geo)
        for code, (name, geo) in seen.items()
        if code not in known
    ]
    if missing:
        Region.objects.bulk_create(missing, ignore_conflicts=True)
        known = dict(Region.objects.filter(provider=provider).values_list("code", "pk"))
    return known
