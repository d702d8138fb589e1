"""Cold renders: never-seen filter URLs right after a data write, in-process (issue 27, item 1).

    .venv/bin/python -m bench.cold [--quick]

Django's test client in this process, with the benchmark settings (DEBUG off, rate limits off)
and the real response cache (Redis DB 9, bench/common.py). The process is warmed up first (its
templates compiled, its modules imported), then:

1. one real write (an UPDATE of one current offer's price, bench/inprocess.py) moves the data
   version, so the response cache holds nothing under the version the requests read;
2. the default page `/` is requested once (cold) and its own statements recorded: replayed
   through the psycopg cursor, their time is the yardstick;
3. 200 distinct filter URLs (seeded; built from real parameters and values of the bench
   database: gpu, provider, fabric, nvlink, nvswitch, interconnect, rdma, price_kind,
   max_gpu_hour, region, geo, gpu_count_min, sort, page_size, alone and combined; each answers
   200, and no two share a cache key) are requested once each. For each, its statements are
   replayed (median of 3) right after it, and the yardstick's statements once more, so the
   yardstick is the median of 201 replays interleaved with the requests;
4. the same for the API: a write, `/api/instances` cold as its yardstick, then the same 200
   filters on `/api/instances`.

A request's time beyond its own SQL is its server time minus the replay of its own statements
(the version read included). Targets: the median of (beyond / yardstick) <= 2, the p95 <= 3.
Every request must have rendered (sent more than the version read): a cache hit would flatter
the figure, and none is possible under a version no request has read.
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import random
import statistics
import sys
from pathlib import Path
from urllib.parse import urlencode

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, SCALE, Report, ms, quick_mode, setup_django
from bench.inprocess import Writer, percentile, replay, replay_median, request

URLS = 200
QUICK_URLS = 40
SEED = 27
MEDIAN_TARGET = 2.0
P95_TARGET = 3.0

BOOLEAN = ("true", "false")
INTERCONNECT = ("nvlink", "rdma", "both", "either", "neither")
FABRICS = ("infiniband", "roce", "efa", "erdma", "tcpx", "ethernet", "unknown")
PRICE_KINDS = ("on-demand", "spot", "reserved")
MAX_GPU_HOUR = ("0.5", "1", "1.5", "2", "2.5", "3", "4", "5", "6", "8", "12")
GEOS = ("na", "sa", "eu", "me", "af", "asia", "oc")
GPU_COUNTS = ("1", "2", "4", "8", "16")
SORTS = (
    "price_gpu_hour",
    "-price_gpu_hour",
    "gpu_count",
    "-gpu_count",
    "nvlink_bw",
    "-nvlink_bw",
    "fabric_gbps",
    "-fabric_gbps",
    "provider",
    "-provider",
    "gpu",
    "-gpu",
)
PAGE_SIZES = ("10", "20", "25", "50", "100", "200")
# How many filters a URL combines (sort and page_size come on top, now and then).
FILTER_COUNTS = (1, 1, 2, 2, 2, 3, 3, 4)


def catalog_values() -> dict[str, list[str]]:
    """GPU and provider slugs of visible types, and `provider:code` of regions with prices."""
    from offerings.models import InstanceType, Offer

    visible = InstanceType.objects.visible()
    gpus = sorted(set(visible.values_list("gpu__slug", flat=True)))
    providers = sorted(set(visible.values_list("provider__slug", flat=True)))
    regions = sorted(
        {
            f"{provider}:{code}"
            for provider, code in Offer.objects.current().values_list(
                "region__provider__slug", "region__code"
            )
        }
    )
    return {"gpu": gpus, "provider": providers, "region": regions}


def filter_queries(n: int, seed: int = SEED) -> list[str]:
    """`n` distinct query strings of real filter parameters (no two with one cache key)."""
    values = catalog_values()
    rng = random.Random(seed)
    single = {
        "nvlink": BOOLEAN,
        "nvswitch": BOOLEAN,
        "rdma": BOOLEAN,
        "interconnect": INTERCONNECT,
        "max_gpu_hour": MAX_GPU_HOUR,
        "geo": GEOS,
        "gpu_count_min": GPU_COUNTS,
    }
    many = {
        "gpu": values["gpu"],
        "provider": values["provider"],
        "fabric": FABRICS,
        "price_kind": PRICE_KINDS,
        "region": values["region"],
    }
    names = sorted(single) + sorted(many)
    seen: set[tuple] = set()
    out: list[str] = []
    while len(out) < n:
        chosen: dict[str, list[str]] = {}
        for name in rng.sample(names, rng.choice(FILTER_COUNTS)):
            if name in single:
                chosen[name] = [rng.choice(single[name])]
            else:
                count = rng.choice((1, 1, 1, 2, 2, 3))
                chosen[name] = rng.sample(many[name], min(count, len(many[name])))
        if "region" in chosen and "provider" in chosen:
            # A provider filter beside a region: the region's own provider (else no row).
            chosen["provider"] = sorted({r.partition(":")[0] for r in chosen["region"]})
        if rng.random() < 0.35:
            chosen["sort"] = [rng.choice(SORTS)]
        if rng.random() < 0.25:
            chosen["page_size"] = [rng.choice(PAGE_SIZES)]
        key = tuple(sorted((name, tuple(v)) for name, v in chosen.items()))
        if key in seen:
            continue
        seen.add(key)
        out.append(urlencode([(name, v) for name, vs in chosen.items() for v in vs]))
    return out


def warm_up(client) -> None:
    """Compile the templates and import what a first request imports: a worker that has served
    before, as every long-lived one has."""
    for url in ("/", "/api/instances", "/?gpu=h100-sxm&sort=-gpu_count", "/api/instances?geo=eu"):
        client.get(url)


def batch(client, writer: Writer, path: str, queries: list[str], replays: int) -> dict:
    """A write, `path` cold as the yardstick, then each query on `path` cold."""
    before, after = writer.write()
    yard = request(client, path)
    if yard.status != 200 or not yard.rendered:
        raise RuntimeError(f"{path} after a write: HTTP {yard.status}, rendered {yard.rendered}")
    yard_replays = [replay(yard.statements)]
    rows = []
    for query in queries:
        url = f"{path}?{query}"
        got = request(client, url)
        own = replay_median(got.statements, replays) if got.rendered else 0.0
        yard_replays.append(replay(yard.statements))
        count = None
        if path.startswith("/api/") and got.status == 200:
            count = json.loads(got.response.content).get("count")
        rows.append(
            {
                "url": url,
                "status": got.status,
                "rendered": got.rendered,
                "server_s": got.seconds,
                "sql_s": own,
                "statements": len(got.statements),
                "count": count,
                "bytes": len(got.response.content),
            }
        )
    yardstick = statistics.median(yard_replays)
    for row in rows:
        row["beyond_s"] = row["server_s"] - row["sql_s"]
        row["ratio"] = row["beyond_s"] / yardstick
    return {
        "versions": [before, after],
        "yardstick_s": yardstick,
        "yardstick_statements": len(yard.statements),
        "default_server_s": yard.seconds,
        "default_beyond_ratio": (yard.seconds - yardstick) / yardstick,
        "rows": rows,
    }


def figures(report: Report, label: str, path: str, measured: dict, key: str) -> None:
    rows = measured["rows"]
    good = [r for r in rows if r["status"] == 200 and r["rendered"]]
    bad = [r for r in rows if r not in good]
    yardstick = measured["yardstick_s"]
    report.add(
        f"{label}: {len(rows)} never-seen filter URLs after a write, each rendered, HTTP 200",
        f"{len(good)} of {len(rows)}",
        f"{len(rows)} of {len(rows)}",
        not bad,
        "; ".join(f"{r['url'][:80]}: HTTP {r['status']}" for r in bad[:3]),
    )
    ratios = [r["ratio"] for r in good]
    mid, p95 = statistics.median(ratios), percentile(ratios, 0.95)
    beyond = [r["beyond_s"] for r in good]
    yard_note = (
        f"yardstick: {path}'s own SQL, {ms(yardstick)} ({measured['yardstick_statements']} "
        "statements, median of the replays interleaved with the requests)"
    )
    report.add(
        f"{label}, cold: median of (server time - its own SQL) / {path}'s SQL",
        f"{mid:.2f}x ({ms(statistics.median(beyond))} beyond its SQL)",
        f"<= {MEDIAN_TARGET:g}x",
        mid <= MEDIAN_TARGET,
        yard_note,
        key=f"{key}a",
    )
    report.add(
        f"{label}, cold: p95 of (server time - its own SQL) / {path}'s SQL",
        f"{p95:.2f}x ({ms(percentile(beyond, 0.95))} beyond its SQL)",
        f"<= {P95_TARGET:g}x",
        p95 <= P95_TARGET,
        yard_note,
        key=f"{key}b",
    )
    server = [r["server_s"] for r in good]
    sql = [r["sql_s"] for r in good]
    statements = [r["statements"] for r in good]
    report.info(
        f"{label}, cold: server time / its own SQL / statements (median; p95)",
        f"{ms(statistics.median(server))} / {ms(statistics.median(sql))} / "
        f"{statistics.median(statements):g} ({ms(percentile(server, 0.95))}; "
        f"{ms(percentile(sql, 0.95))}; {percentile(statements, 0.95)}), statements "
        f"{min(statements)}-{max(statements)}, the version read included",
    )
    report.info(
        f"{label}, cold: {path} itself (the yardstick's own request)",
        f"{ms(measured['default_server_s'])}, of which {ms(yardstick)} SQL: "
        f"{measured['default_beyond_ratio']:.2f}x the yardstick beyond its SQL "
        f"({measured['yardstick_statements']} statements, one request)",
    )
    worst = sorted(good, key=lambda r: r["ratio"], reverse=True)[:3]
    report.info(
        f"{label}, cold: the furthest beyond their SQL",
        "; ".join(
            f"{r['url']} {r['ratio']:.2f}x ({ms(r['server_s'])}, SQL {ms(r['sql_s'])})"
            for r in worst
        ),
    )


def profile_cold(client, writer: Writer, url: str, label: str, report: Report) -> None:
    """The hottest Python functions of one cold render, for the diagnosis of a failing ratio."""
    writer.write()
    profiler = cProfile.Profile()
    profiler.enable()
    client.get(url)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(12)
    lines = [line for line in out.getvalue().splitlines() if line.strip() and "/" in line][:12]
    report.details.setdefault("profile_tottime", {})[label] = lines
    print(f"    profile of a cold {label} (tottime, top 8):")
    for line in lines[:8]:
        print("     ", line.strip()[:150].replace(str(ROOT) + "/", ""))


def main(argv: list[str] | None = None) -> int:
    quick = quick_mode(argv)
    n = QUICK_URLS if quick else URLS
    replays = 1 if quick else 3
    print(f"== cold renders: {n} never-seen filter URLs after a write (in-process)", flush=True)
    setup_django()
    import logging

    from django.conf import settings
    from django.test import Client

    from offerings.models import InstanceType

    logging.getLogger("django.request").setLevel(logging.CRITICAL)
    report = Report("cold")
    visible = InstanceType.objects.visible().count()
    if visible < SCALE:
        report.add("visible instance types", f"{visible:,}", f">= {SCALE:,}", False, "")
        report.save()
        return 1
    cache = settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[-1]
    report.info(
        "setup",
        f"{visible:,} visible types; Django test client, DEBUG={settings.DEBUG}, "
        f"cache {cache}, PAGE_CACHE_SECONDS={settings.PAGE_CACHE_SECONDS}, "
        f"RATELIMIT_ENABLE={settings.RATELIMIT_ENABLE}; statements replayed {replays}x each",
    )
    client = Client(raise_request_exception=False)
    writer = Writer()
    queries = filter_queries(n)
    report.details["queries"] = queries
    try:
        warm_up(client)
        page = batch(client, writer, "/", queries, replays)
        figures(report, "filter page", "/", page, "27.1")
        api = batch(client, writer, "/api/instances", queries, replays)
        figures(report, "API", "/api/instances", api, "27.1")
        empty = [r for r in api["rows"] if r["count"] == 0]
        report.info(
            "filters matching no row (the API's count)",
            f"{len(empty)} of {len(api['rows'])}",
            "valid filters; an empty page is a render too",
        )
        report.details["page"] = page
        report.details["api"] = api
        worst_page = max(page["rows"], key=lambda r: r["ratio"])["url"]
        profile_cold(client, writer, worst_page, "filter page (its furthest URL)", report)
        profile_cold(client, writer, "/api/instances?" + queries[0], "API", report)
    finally:
        writer.settle()
    report.save()
    return 0 if all(f.passed is not False for f in report.figures) else 1


if __name__ == "__main__":
    sys.exit(main())
