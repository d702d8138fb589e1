"""A large synthetic catalog for the benchmarks only: seeded, idempotent, loaded with COPY.

    .venv/bin/python -m bench.synthetic [--seed N] [--instances 5300] [--offers 150000]
                                        [--history 1000000] [--recreate-db]

Runs against the benchmark database only (bench/common.py). It makes sure the database exists
and is migrated, empties every table of the `offerings` app, loads the real catalog with
`load_catalog` (so the real GPU models, exchange rates and providers are there), then adds about
20 synthetic providers with their regions, instance types (realistic mixes of NVLink topologies
and fabrics, unknowns included), current and retired offers and price history, each table in one
COPY straight into the real tables. The same seed gives the same catalog; timestamps are relative
to the anchor (default: today 00:00 UTC) so prices have realistic ages.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import subprocess
import sys
import time
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    DEFAULT_SCALE,
    PY,
    ROOT,
    SCALE,
    Report,
    bench_env,
    check_bench_database,
    setup_django,
)

SEED = 20261130
GEO_WEIGHTS = {"na": 30, "eu": 28, "asia": 26, "oc": 5, "sa": 4, "me": 4, "af": 3}
REGION_STEMS = {
    "na": ["us-east", "us-west", "us-central", "ca-central", "us-south"],
    "eu": ["eu-west", "eu-north", "eu-central", "eu-south", "uk-south"],
    "asia": ["ap-northeast", "ap-southeast", "ap-south", "cn-north", "cn-east"],
    "oc": ["au-east", "au-southeast", "nz-north"],
    "sa": ["sa-east", "sa-west"],
    "me": ["me-central", "me-west"],
    "af": ["af-south", "af-north"],
}
# Rough list prices per GPU-hour in USD, so the table's price order looks like the real one.
BASE_GPU_HOUR_USD = {
    "h100-sxm": 2.6,
    "h100-pcie": 2.1,
    "h100-nvl": 2.3,
    "h200-sxm": 3.4,
    "h20": 1.6,
    "b200": 5.2,
    "b300": 6.5,
    "gb200": 6.2,
    "gb300": 7.5,
    "a100-sxm-40gb": 1.3,
    "a100-sxm-80gb": 1.7,
    "a100-pcie-80gb": 1.5,
    "l40s": 1.0,
    "l4": 0.55,
    "l20": 0.7,
    "a10g": 0.75,
    "rtx-4090": 0.4,
    "rtx-6000-ada": 0.9,
    "rtx-a6000": 0.6,
    "v100-sxm2-32gb": 0.8,
    "mi300x": 2.2,
}
GPU_WEIGHTS = {
    "h100-sxm": 18,
    "h200-sxm": 10,
    "a100-sxm-80gb": 10,
    "a100-sxm-40gb": 5,
    "b200": 6,
    "l40s": 8,
    "l4": 5,
    "rtx-4090": 5,
    "mi300x": 4,
    "gb200": 2,
}
NVLINK_GB_PER_S = {2: 300, 3: 600, 4: 900, 5: 1800}
KINDS = [("on-demand", 0, 0.45), ("spot", 0, 1.0), ("reserved", 12, 1.2), ("reserved", 36, 1.4)]
KIND_PRICE = {
    ("on-demand", 0): 1.0,
    ("spot", 0): 0.45,
    ("reserved", 12): 0.72,
    ("reserved", 36): 0.52,
}
PORT_SPEEDS = {
    "infiniband": [200, 400, 400, 800],
    "roce": [100, 200, 400],
    "efa": [100, 200, 400],
    "erdma": [100, 200],
    "tcpx": [200],
    "ethernet": [25, 50, 100, 200],
}
RDMA = {"infiniband", "roce", "efa", "erdma"}


# -- preparing the database ----------------------------------------------------------------------


def run_manage(*args: str) -> str:
    result = subprocess.run(
        [PY, "manage.py", *args], cwd=ROOT, env=bench_env(), capture_output=True, text=True
    )
    if result.returncode != 0:
        sys.exit(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def ensure_database(recreate: bool) -> None:
    """Create the benchmark database if needed, migrate it and collect static files."""
    import psycopg

    from bench.common import BENCH_DATABASE_URL

    name = check_bench_database()
    admin_url = BENCH_DATABASE_URL.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if exists and recreate:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            exists = None
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
            print(f"created database {name}")
    run_manage("migrate", "--noinput")
    run_manage("collectstatic", "--noinput")


# -- COPY in text format -------------------------------------------------------------------------


def _text(value) -> str:
    if value is None:
        return r"\N"
    if value is True:
        return "t"
    if value is False:
        return "f"
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return "{" + ",".join(json.dumps(str(v)) for v in value) + "}"
    if isinstance(value, dict):
        value = json.dumps(value)
    text = str(value)
    if any(c in text for c in "\\\t\n\r"):
        text = text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
        text = text.replace("\r", "\\r")
    return text


class CopyWriter:
    """COPY rows (dicts keyed by column) into a model's table; other columns get their default."""

    def __init__(self, model) -> None:
        self.model = model
        self.table = model._meta.db_table
        self.columns = [f.column for f in model._meta.concrete_fields]
        self.defaults = {}
        for f in model._meta.concrete_fields:
            if f.has_default():
                self.defaults[f.column] = f.get_default()
            elif f.null:
                self.defaults[f.column] = None
            elif f.blank and f.get_internal_type() in ("CharField", "TextField", "URLField"):
                self.defaults[f.column] = ""
        self.buffer = io.StringIO()
        self.count = 0
        self._checked = False

    def add(self, row: dict) -> None:
        if not self._checked:
            missing = [c for c in self.columns if c not in row and c not in self.defaults]
            if missing:
                sys.exit(
                    f"bench/synthetic.py does not know {self.table}.{', '.join(missing)} "
                    "(NOT NULL, no default): teach it these columns"
                )
            self._checked = True
        values = [row[c] if c in row else self.defaults[c] for c in self.columns]
        self.buffer.write("\t".join(map(_text, values)))
        self.buffer.write("\n")
        self.count += 1

    def flush(self, cursor) -> int:
        sql = f"COPY {self.table} ({', '.join(self.columns)}) FROM STDIN"
        data = self.buffer.getvalue()
        with cursor.cursor.copy(sql) as copy:
            step = 1 << 20
            for start in range(0, len(data), step):
                copy.write(data[start : start + step])
        self.buffer = io.StringIO()
        return self.count


# -- the generator -------------------------------------------------------------------------------


def pick(rng: random.Random, weights: dict):
    keys = list(weights)
    return rng.choices(keys, weights=[weights[k] for k in keys])[0]


def make_providers(rng: random.Random, n: int) -> list[dict]:
    providers = []
    for i in range(1, n + 1):
        kind = "hyperscaler" if i <= 3 else "marketplace" if i > n - 4 else "specialist"
        currency = "CNY" if i in (4, 9, 14) else "EUR" if i in (6, 12) else "USD"
        providers.append(
            {
                "slug": f"synth{i:02d}",
                "name": f"Synthetic Cloud {i:02d}",
                "kind": kind,
                "currency": currency,
                "regions": {"hyperscaler": 30, "marketplace": 18}.get(kind, rng.randint(6, 14)),
                "fabric": rng.choice(
                    ["infiniband", "infiniband", "roce", "roce", "efa", "erdma", "tcpx"]
                ),
                "price_factor": rng.uniform(0.7, 1.4),
                "weight": {"hyperscaler": 3.0, "marketplace": 1.6}.get(kind, 1.0),
            }
        )
    return providers


def make_link(rng: random.Random, gpu: dict, count: int) -> dict:
    """A GpuLink row that respects the constraints; about one in six is (partly) unknown."""
    gen = gpu["nvlink_generation"]
    none = {
        "technology": "none",
        "generation": None,
        "topology": "",
        "domain_size": None,
        "bandwidth_gbytes_per_s": None,
    }
    unknown = {
        "technology": "unknown",
        "generation": None,
        "topology": "unknown",
        "domain_size": None,
        "bandwidth_gbytes_per_s": None,
    }
    roll = rng.random()
    if count == 1:
        return none if roll < 0.7 else unknown
    if gpu["vendor"] == "amd":
        if roll < 0.8:
            return {
                "technology": "infinity-fabric",
                "generation": None,
                "topology": "mesh",
                "domain_size": count,
                "bandwidth_gbytes_per_s": 896,
            }
        return unknown
    if gpu["form_factor"] in ("sxm", "superchip") and gen:
        if roll < 0.78:
            topology = "hybrid-cube-mesh" if gen == 2 and count == 8 else "nvswitch"
            domain = 72 if gpu["form_factor"] == "superchip" else count
            return {
                "technology": "nvlink",
                "generation": gen,
                "topology": topology,
                "domain_size": domain,
                "bandwidth_gbytes_per_s": NVLINK_GB_PER_S[gen],
            }
        if roll < 0.88:  # NVLink known, details not stated by the source
            return {
                "technology": "nvlink",
                "generation": gen if rng.random() < 0.5 else None,
                "topology": "unknown",
                "domain_size": None,
                "bandwidth_gbytes_per_s": None,
            }
        return unknown
    if gen:  # PCIe cards with an NVLink bridge
        if roll < 0.4:
            return {
                "technology": "nvlink",
                "generation": gen,
                "topology": "bridge",
                "domain_size": 2,
                "bandwidth_gbytes_per_s": NVLINK_GB_PER_S[gen],
            }
        return none if roll < 0.8 else unknown
    return none if roll < 0.75 else unknown


def make_fabric(rng: random.Random, provider: dict, count: int, source: str) -> dict:
    roll = rng.random()
    if count >= 8 and roll < 0.7:
        tech = provider["fabric"]
    elif roll < 0.8:
        tech = "ethernet"
    else:
        tech = "unknown"
    if tech == "unknown":
        return {"technology": "unknown", "source_url": ""}
    port = rng.choice(PORT_SPEEDS[tech])
    nics = count if tech != "ethernet" and count >= 4 else rng.choice([1, 1, 2])
    known_bw = rng.random() < 0.9
    rdma_tech = tech in RDMA
    multi = (
        rng.choices([True, False, None], weights=[50, 25, 25])[0]
        if rdma_tech
        else (rng.choices([True, False, None], weights=[15, 45, 40])[0])
    )
    if multi is True:
        max_nodes = rng.choice([None, 2, 4, 16, 32, 64, 128, 256, 512])
    elif multi is False:
        max_nodes = rng.choice([None, 1])
    else:
        max_nodes = None
    # Plain Ethernet is the general network only: its figure goes there, not to a back-end.
    backend = known_bw and tech != "ethernet"
    return {
        "technology": tech,
        "port_speed_gbits_per_s": port if backend else None,
        "nics": nics if backend else None,
        "bandwidth_gbits_per_s": port * nics if backend else None,
        "network_gbits_per_s": port * nics if known_bw and tech == "ethernet" else None,
        "rdma": (True if rng.random() < 0.9 else None) if rdma_tech else rng.choice([False, None]),
        "gpudirect_rdma": (True if rng.random() < 0.7 else None)
        if rdma_tech
        else rng.choice([False, None]),
        "rail_optimized": rng.choice([True, False, None, None]) if rdma_tech else None,
        "multi_node": multi,
        "max_nodes": max_nodes,
        "sales_only": rng.choice([True, False, None, None, None]),
        "cluster_source_url": source + "#clusters" if multi is not None else "",
        "source_url": source + "#network",
    }


def distribute(rng: random.Random, total: int, weights: list[float], caps: list[int]) -> list[int]:
    """Integer counts summing to `total`, proportional to weights, none above its cap."""
    scale = total / sum(weights)
    counts = [min(cap, int(w * scale)) for w, cap in zip(weights, caps, strict=True)]
    short = total - sum(counts)
    order = list(range(len(counts)))
    while short > 0:
        rng.shuffle(order)
        moved = 0
        for i in order:
            if short == 0:
                break
            if counts[i] < caps[i]:
                counts[i] += 1
                short -= 1
                moved += 1
        if moved == 0:
            raise ValueError(f"cannot place {total} rows under the caps")
    return counts


def generate(args, report: Report) -> dict:
    from django.apps import apps
    from django.core.management import call_command
    from django.db import connection, transaction

    from offerings.models import (
        ExchangeRate,
        Fabric,
        GpuLink,
        GpuModel,
        InstanceType,
        Offer,
        PriceObservation,
        Provider,
        Region,
    )

    rng = random.Random(args.seed)
    anchor = (
        datetime.fromisoformat(args.anchor).replace(tzinfo=UTC)
        if args.anchor
        else datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    )
    steps: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        steps[name] = now - clock
        clock = now

    # 1. Empty the catalog (every table of the offerings app), then load the real one.
    # Bookkeeping is kept: the catalog-version row the page cache keys on (its triggers count
    # the truncation and every COPY below as writes, as they should).
    keep = {"catalogversion"}
    tables = [
        m._meta.db_table
        for m in apps.get_app_config("offerings").get_models()
        if m._meta.model_name not in keep
    ]
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
    lap("truncate")
    call_command("load_catalog", verbosity=0)
    lap("load_catalog (real fixtures)")

    gpus = {
        g.slug: {
            "id": g.pk,
            "vendor": g.vendor,
            "form_factor": g.form_factor,
            "nvlink_generation": g.nvlink_generation,
            "memory_gib": g.memory_gib,
        }
        for g in GpuModel.objects.all()
    }
    gpu_weights = {slug: GPU_WEIGHTS.get(slug, 2) for slug in gpus}
    rates = {}
    for rate in ExchangeRate.objects.order_by("currency", "-rate_date"):
        rates.setdefault(rate.currency, (rate.usd_per_unit, rate.rate_date))

    providers = make_providers(rng, args.providers)
    for p in providers:
        if p["currency"] not in rates:
            p["currency"] = "USD"
    with transaction.atomic():
        rows = Provider.objects.bulk_create(
            [
                Provider(
                    slug=p["slug"],
                    name=p["name"],
                    website=f"https://{p['slug']}.example.com/",
                    kind=p["kind"],
                    home_currency=p["currency"],
                    source_url=f"https://{p['slug']}.example.com/about",
                    verified_at=anchor.date() - timedelta(days=rng.randint(0, 60)),
                )
                for p in providers
            ]
        )
        for p, row in zip(providers, rows, strict=True):
            p["id"] = row.pk

        def next_id(model) -> int:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT coalesce(max(id), 0) + 1 FROM {model._meta.db_table}")
                return cursor.fetchone()[0]

        # 2. Regions.
        region_writer = CopyWriter(Region)
        region_id = next_id(Region)
        for p in providers:
            p["region_ids"] = []
            used = set()
            for _ in range(p["regions"]):
                geo = pick(rng, GEO_WEIGHTS)
                stem = rng.choice(REGION_STEMS[geo])
                n = 1
                while f"{stem}-{n}" in used:
                    n += 1
                code = f"{stem}-{n}"
                used.add(code)
                region_writer.add(
                    {
                        "id": region_id,
                        "provider_id": p["id"],
                        "code": code,
                        "name": f"{stem.replace('-', ' ').title()} {n}",
                        "geo": geo,
                    }
                )
                p["region_ids"].append(region_id)
                region_id += 1

        # 3. Instance types, each with its GPU link and fabric.
        inst_writer = CopyWriter(InstanceType)
        link_writer = CopyWriter(GpuLink)
        fabric_writer = CopyWriter(Fabric)
        instance_id = next_id(InstanceType)
        per_provider = distribute(
            rng, args.instances, [p["weight"] for p in providers], [10**6] * len(providers)
        )
        instances = []
        for p, n in zip(providers, per_provider, strict=True):
            for i in range(n):
                slug_gpu = pick(rng, gpu_weights)
                gpu = gpus[slug_gpu]
                if gpu["form_factor"] == "superchip":
                    count = 4
                elif gpu["form_factor"] in ("sxm", "oam"):
                    count = rng.choices([8, 4, 2, 1], weights=[70, 12, 8, 10])[0]
                else:
                    count = rng.choices([1, 2, 4, 8], weights=[35, 25, 25, 15])[0]
                family = rng.choice(["gx", "gpu", "hpc", "ml", "nd", "p", "bm"])
                name = f"{family}{i % 9 + 1}.{count}x{slug_gpu}.v{i}"
                slug = name.replace(".", "-")
                source = f"https://{p['slug']}.example.com/docs/{slug}"
                active = rng.random() < 0.97
                hidden = rng.random() < 0.02
                created = anchor - timedelta(days=rng.randint(30, 900))
                inst_writer.add(
                    {
                        "id": instance_id,
                        "provider_id": p["id"],
                        "name": name,
                        "slug": slug,
                        "gpu_id": gpu["id"],
                        "gpu_count": count,
                        "vcpus": count * rng.choice([8, 12, 16, 24, 26, 28]),
                        "ram_gib": Decimal(count * rng.choice([32, 64, 96, 128, 232])),
                        "local_nvme_gb": rng.choice([None, count * 960, count * 3840]),
                        "billing_granularity": rng.choice(["second", "minute", "hour", "unknown"]),
                        "minimum_term_hours": rng.choice([None, 0, 1, 0]),
                        "notes": "",
                        "setup_notes": "",
                        "is_verified": rng.random() < 0.6,
                        "is_hidden": hidden,
                        "is_active": active,
                        "last_seen_at": anchor - timedelta(hours=rng.randint(1, 72)),
                        "created_at": created,
                        "updated_at": created + timedelta(days=rng.randint(0, 29)),
                        "source_url": source,
                        "verified_at": None
                        if rng.random() < 0.1
                        else anchor.date() - timedelta(days=rng.randint(0, 200)),
                        "locked_fields": [],
                        "fixture_digest": "",
                    }
                )
                link = make_link(rng, gpu, count)
                link_writer.add(
                    link
                    | {
                        "instance_id": instance_id,
                        "source_url": source + "#nvlink",
                        "verified_at": None,
                        "locked_fields": [],
                        "fixture_digest": "",
                    }
                )
                fabric = make_fabric(rng, p, count, source)
                fabric_writer.add(
                    fabric
                    | {
                        "instance_id": instance_id,
                        "verified_at": None,
                        "locked_fields": [],
                        "fixture_digest": "",
                    }
                )
                instances.append(
                    {
                        "id": instance_id,
                        "provider": p,
                        "gpu": slug_gpu,
                        "count": count,
                        "active": active,
                    }
                )
                instance_id += 1
        lap("generate providers, regions, instance types")

        # 4. Offers: exactly args.offers current ones, plus 5% retired ones for history.
        offer_writer = CopyWriter(Offer)
        offer_id = next_id(Offer)
        live = [inst for inst in instances if inst["active"]]
        caps = [len(inst["provider"]["region_ids"]) * len(KINDS) for inst in live]
        weights = [
            rng.uniform(0.3, 1.7) * len(inst["provider"]["region_ids"]) ** 0.5 for inst in live
        ]
        counts = distribute(rng, args.offers, weights, caps)
        retired_target = args.offers // 20
        offers = []  # (offer id, price per hour as float, currency, observed_at)
        region_factor = {}
        for inst, n in zip(live, counts, strict=True):
            p = inst["provider"]
            combos = [(r, kind, term, bias) for r in p["region_ids"] for kind, term, bias in KINDS]
            combos.sort(key=lambda c: rng.random() * c[3])
            extra = 1 if retired_target > 0 and rng.random() < 0.05 * 1.05 else 0
            chosen = combos[: min(len(combos), n + extra)]
            base = BASE_GPU_HOUR_USD.get(inst["gpu"], 1.5) * p["price_factor"]
            currency = p["currency"]
            usd_per_unit, rate_date = rates.get(currency, (Decimal(1), None))
            for index, (region, kind, term, _) in enumerate(chosen):
                retired = index >= n
                if retired:
                    retired_target -= 1
                factor = region_factor.setdefault(region, rng.uniform(0.92, 1.25))
                per_gpu_usd = base * factor * KIND_PRICE[(kind, term)] * rng.uniform(0.97, 1.03)
                hourly = round(per_gpu_usd * inst["count"] / float(usd_per_unit), 6)
                per_gpu = (Decimal(f"{hourly:.6f}") * usd_per_unit / inst["count"]).quantize(
                    Decimal("0.000001")
                )
                stale = rng.random() < 0.12
                observed = anchor - timedelta(
                    minutes=rng.randint(73 * 60, 30 * 24 * 60)
                    if stale
                    else rng.randint(10, 48 * 60)
                )
                offer_writer.add(
                    {
                        "id": offer_id,
                        "instance_id": inst["id"],
                        "region_id": region,
                        "kind": kind,
                        "term_months": term,
                        "price_per_hour": f"{hourly:.6f}",
                        "currency": currency,
                        "price_per_gpu_hour_usd": per_gpu,
                        "exchange_rate_date": rate_date if currency != "USD" else None,
                        "available": rng.choice([True, True, False, None]),
                        "observed_at": observed,
                        "first_seen_at": observed - timedelta(days=rng.randint(20, 400)),
                        "last_seen_at": observed
                        if retired
                        else max(observed, anchor - timedelta(hours=rng.randint(1, 6))),
                        "missing_runs": 2 if retired else 0,
                        "is_active": not retired,
                        "origin": "scraper" if rng.random() < 0.8 else "catalog",
                        "source_url": f"https://{p['slug']}.example.com/pricing?sku={inst['id']}",
                        "locked_fields": [],
                    }
                )
                offers.append((offer_id, hourly, currency, observed))
                offer_id += 1
        lap("generate offers")

        # 5. Price history: exactly args.history rows, the newest one the offer's current price.
        history_writer = CopyWriter(PriceObservation)
        history_id = next_id(PriceObservation)
        per_offer = distribute(
            rng,
            args.history,
            [rng.uniform(0.2, 1.8) for _ in offers],
            [400] * len(offers),
        )
        for (oid, hourly, currency, observed), n in zip(offers, per_offer, strict=True):
            if n == 0:
                continue
            price = hourly
            when = observed
            step_days = rng.choice([1, 2, 3, 7, 14])
            for _k in range(n):
                history_writer.add(
                    {
                        "id": history_id,
                        "offer_id": oid,
                        "price_per_hour": f"{price:.6f}",
                        "currency": currency,
                        "observed_at": when,
                        "run_id": None,
                    }
                )
                history_id += 1
                when -= timedelta(days=step_days, minutes=rng.randint(0, 600))
                price = max(0.01, round(price * (1 + rng.gauss(0, 0.04)), 6))
        lap("generate price history")

        with connection.cursor() as cursor:
            written = {}
            for writer in (
                region_writer,
                inst_writer,
                link_writer,
                fabric_writer,
                offer_writer,
                history_writer,
            ):
                start = time.perf_counter()
                written[writer.table] = writer.flush(cursor)
                steps[f"COPY {writer.table}"] = time.perf_counter() - start
            for model in (Provider, Region, InstanceType, Offer, PriceObservation):
                table = model._meta.db_table
                cursor.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT max(id) FROM {table}))"
                )
        clock = time.perf_counter()
    lap("commit")
    # VACUUM as well as ANALYZE: what autovacuum does within minutes of a bulk load, so the
    # benchmarks read the tables in their steady state (visibility map set, as index-only scans
    # need), not in the moment after a COPY that no server stays in.
    with connection.cursor() as cursor:  # autocommit: the load's transaction has ended
        cursor.execute("VACUUM (ANALYZE)")
    lap("VACUUM ANALYZE")
    return {"steps": steps, "written": written, "anchor": anchor.isoformat()}


def flush_bench_cache() -> None:
    """Cached pages of the previous catalog must not survive it (our own Redis DB only)."""
    from django.core.cache import cache

    cache.clear()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--providers", type=int, default=20)
    # 5,300 types (5,000 visible and active), 150,000 current prices and 1,000,000 history
    # rows at the default scale; the same proportions at another (BENCH_SCALE).
    parser.add_argument("--instances", type=int, default=5300 * SCALE // DEFAULT_SCALE)
    parser.add_argument("--offers", type=int, default=150_000 * SCALE // DEFAULT_SCALE)
    parser.add_argument("--history", type=int, default=1_000_000 * SCALE // DEFAULT_SCALE)
    parser.add_argument("--anchor", help="ISO date the prices' ages count from (default today)")
    parser.add_argument("--recreate-db", action="store_true", help="drop and create the database")
    parser.add_argument("--quick", action="store_true", help="accepted for run.py; same size")
    args = parser.parse_args(argv)

    print("== synthetic catalog", flush=True)
    start = time.perf_counter()
    ensure_database(args.recreate_db)
    prepared = time.perf_counter() - start
    setup_django()
    report = Report("synthetic")
    gen_start = time.perf_counter()
    result = generate(args, report)
    flush_bench_cache()
    generation = time.perf_counter() - gen_start

    from offerings.models import InstanceType, Offer, PriceObservation, Provider

    instances = InstanceType.objects.count()
    visible = InstanceType.objects.visible().count()
    current = Offer.objects.current().count()
    history = PriceObservation.objects.count()
    providers = Provider.objects.count()
    for name, seconds in result["steps"].items():
        print(f"    {name:<45} {seconds:7.2f} s")
    report.details = result | {"prepare_s": prepared, "seed": args.seed}
    factor = SCALE / DEFAULT_SCALE
    report.add(
        "instance types",
        f"{instances:,} ({visible:,} visible, {providers} providers)",
        f">= {SCALE:,}",
        instances >= SCALE,
    )
    offers_target, history_target = int(150_000 * factor), int(1_000_000 * factor)
    report.add(
        "current prices (offers)",
        f"{current:,}",
        f">= {offers_target:,}",
        current >= offers_target,
    )
    report.add(
        "price-history rows", f"{history:,}", f">= {history_target:,}", history >= history_target
    )
    # At another scale, the generation may take longer in proportion.
    report.add(
        "generation time (truncate, load_catalog, generate, COPY, VACUUM ANALYZE)",
        f"{generation:.1f} s",
        f"< {300 * factor:.0f} s",
        generation < 300 * factor,
        f"plus {prepared:.1f} s migrate + collectstatic",
    )
    report.save()
    return 0 if all(f.passed is not False for f in report.figures) else 1


if __name__ == "__main__":
    sys.exit(main())
