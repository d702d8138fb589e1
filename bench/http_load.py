"""HTTP under load: gunicorn on CPU 0, wrk on CPU 1 (issue 11, item 4).

    .venv/bin/python -m bench.http_load [--quick]

(Not `bench/http.py`: run as a script it would shadow the standard library's `http`.)

gunicorn (sync workers, `--preload`, WORKERS of them, pinned to CPU 0) serves the benchmark
database with rate limits off; wrk (one thread, CONNECTIONS connections, pinned to CPU 1) drives
it for DURATION seconds per run, RUNS runs per scenario, the scenarios taken in turn (round
robin) so that drift hits them alike. A Lua script (bench/wrk/interleave.lua) cycles through
the scenario's paths and counts every status: any answer other than the expected one, and any
socket error, is an error. Scenarios:

- no-work: the default page's bytes, saved, served by a tiny WSGI app (bench/nowork_wsgi.py)
  under the same gunicorn settings: the ceiling;
- cached: `/` again and again, with whatever caching the code does;
- uncached: `/` with a parameter the site ignores (`utm_content`) new on every request, so no
  cache keyed on the URL can answer (checked in-process first: such a request must run SQL);
- uncached mix: realistic filter URLs interleaved, each made new the same way;
- conditional: `/` with `If-None-Match` set to the ETag of a first answer, expecting 304.

Also: the htmx fragment's bytes against the full page's, and the slowest hostile query string
(read from the security tests' figure under var/ if one exists, else ~200 generated here, timed
through gunicorn and in-process) against the default page's median.
"""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote, urlencode

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    ROOT,
    VAR,
    Report,
    bench_env,
    median,
    ms,
    quick_mode,
    setup_django,
    spread,
)
from bench.server import Gunicorn, pinned

WORKERS = 2
CONNECTIONS = 4
LUA = ROOT / "bench" / "wrk" / "interleave.lua"

REALISTIC = [
    "/",
    "/?nvlink=true&fabric=infiniband",
    "/?nvlink=true&gpu_count_min=2",
    "/?fabric=infiniband&fabric=roce&fabric=efa&fabric=erdma",
    "/?nvswitch=true&gpu_count_min=8",
    "/?nvlink=false&gpu_count_min=2",
    "/?gpu=h100-sxm",
    "/?gpu=h100-sxm&gpu=h200-sxm&sort=price_gpu_hour",
    "/?gpu=a100-sxm-80gb&price_kind=spot",
    "/?gpu=b200&multi_node=true",
    "/?price_kind=on-demand&max_gpu_hour=2.5",
    "/?geo=eu&price_kind=on-demand",
    "/?geo=asia&currency=CNY",
    "/?sort=-fabric_gbps&fabric_gbps_min=1600",
    "/?sort=nvlink_bw&nvlink_bw_min=900",
    "/?gpudirect_rdma=true&gpu_count_min=8",
    "/?q=h100",
    "/?gpu_memory_min=80&gpu_count_min=8",
    "/?node_memory_min=1000",
    "/?available=true&geo=na",
    "/?page=2",
    "/?page=5&sort=gpu_count",
    "/?page_size=100&sort=provider",
    "/?provider=aws&provider=azure&provider=gcp",
    "/?multi_node=true&fabric=infiniband&sort=-gpu_count",
    "/?price_kind=reserved&sort=price_gpu_hour",
    "/?currency=CNY&gpu=h100-sxm&price_kind=on-demand",
    "/?nvlink=true&max_gpu_hour=4&geo=eu",
    "/?sort=gpu",
    "/?gpu=l40s&gpu=l4",
]


# -- wrk ---------------------------------------------------------------------------------------


ESTIMATE = "/api/estimate?params_b=70&mode=train-fsdp&nodes=1&nodes=2&nodes=4&nodes=8"


def run_wrk(
    base: str, paths: list[str], mode: str, expected: int, duration: int, header: str = ""
) -> dict:
    paths_file = VAR / f"wrk-paths-{abs(hash(tuple(paths))) % 10**8}.txt"
    paths_file.write_text("\n".join(paths) + "\n")
    command = pinned(
        "1",
        [
            "wrk",
            "-t1",
            f"-c{CONNECTIONS}",
            f"-d{duration}s",
            "--timeout",
            "30s",
            "--latency",
            "-s",
            str(LUA),
            base,
            "--",
            str(paths_file),
            mode,
            str(expected),
            header,
        ],
    )
    result = subprocess.run(command, capture_output=True, text=True, timeout=duration + 90)
    for line in result.stdout.splitlines():
        if line.startswith("BENCH_JSON "):
            data = json.loads(line[len("BENCH_JSON ") :])
            seconds = data["duration_us"] / 1e6
            data["rps"] = data["requests"] / seconds if seconds else 0.0
            data["errors"] = (
                data["unexpected"]
                + data["connect_errors"]
                + data["read_errors"]
                + data["write_errors"]
                + data["timeouts"]
            )
            return data
    raise RuntimeError(f"wrk gave no result:\n{result.stdout}\n{result.stderr}")


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict, bytes, float]:
    request = urllib.request.Request(url, headers=headers or {})
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            body = response.read()
            status, got = response.status, dict(response.headers)
    except urllib.error.HTTPError as exc:
        body = exc.read()
        status, got = exc.code, dict(exc.headers)
    return status, got, body, time.perf_counter() - start


# -- hostile query strings ---------------------------------------------------------------------


def hostile_queries(rng: random.Random) -> list[str]:
    """About 100 hostile query strings (each sent to the page and to the API)."""
    big = "a" * 10240
    known = [
        "q",
        "gpu",
        "provider",
        "region",
        "geo",
        "available",
        "gpu_count_min",
        "gpu_memory_min",
        "node_memory_min",
        "nvlink",
        "nvswitch",
        "nvlink_bw_min",
        "fabric",
        "fabric_gbps_min",
        "gpudirect_rdma",
        "multi_node",
        "price_kind",
        "max_gpu_hour",
        "currency",
        "sort",
        "page",
        "page_size",
        "format",
    ]
    out = []
    # ORM-shaped and private names.
    for key in [
        "gpu__slug",
        "provider__name__icontains",
        "offers__price_per_hour__gt",
        "gpu__memory_gib__gte",
        "id__regex",
        "pk__in",
        "__class__",
        "_meta",
        "fabric__technology__iregex",
        "instance__provider__slug",
        "_",
        "__",
        "sort__desc",
        "q__contains",
        "page__gte",
    ]:
        out.append(urlencode({key: "(a+)+$"}))
    # 10 KB values in every known parameter, and some 10 KB unicode / digits.
    for key in known:
        out.append(urlencode({key: big}))
    out += [
        urlencode({"q": "界" * 3400}),
        urlencode({"max_gpu_hour": "9" * 10240}),
        urlencode({"page": "9" * 10240}),
        urlencode({"gpu_count_min": "1" + "0" * 10240}),
    ]
    # NUL and other control characters, broken UTF-8.
    out += [
        "q=%00",
        "gpu=h100-sxm%00",
        "%00=1",
        "sort=%00price_gpu_hour",
        "q=a%00b%00c",
        "provider=aws%00azure",
        "q=%ff%fe%fd",
        "gpu=%c0%af",
        "q=%0d%0aSet-Cookie:%20x=1",
        "region=%e2%80%ae",
    ]
    # Repeated keys.
    out += [
        "&".join(["gpu=h100-sxm"] * 500),
        "&".join(["region=us-east-1"] * 1000),
        "&".join(f"provider=synth{i % 20 + 1:02d}" for i in range(300)),
        "&".join(["fabric=infiniband", "fabric=roce"] * 100),
        "&".join(["price_kind=spot"] * 300),
        "page=1&page=2",
        "sort=gpu&sort=-gpu",
        "q=a&q=b",
        "&".join(f"gpu={i}" for i in range(400)),
        "&".join(f"utm_{i}=x" for i in range(1000)),
    ]
    # Numbers at and past the edges.
    for key in [
        "page",
        "page_size",
        "gpu_count_min",
        "max_gpu_hour",
        "nvlink_bw_min",
        "fabric_gbps_min",
        "node_memory_min",
    ]:
        for value in [
            "99999999999999999999",
            "-1",
            "0",
            "1e309",
            "NaN",
            "Infinity",
            "-0",
            "1e-400",
            "0x10",
            " 1 ",
        ]:
            out.append(urlencode({key: value}))
    # Search terms that make wide queries: many single letters, LIKE wildcards.
    out += [
        urlencode(
            {"q": " ".join("abcdefghijklmnopqrstuvwxyz0123456789"[i % 36] for i in range(100))}
        ),
        urlencode({"q": "%" * 200}),
        urlencode({"q": "_" * 200}),
        urlencode({"q": " ".join(["%"] * 100)}),
        urlencode({"q": "\\" * 200}),
    ]
    # Everything at once.
    out.append(
        "&".join(
            ["gpu=h100-sxm"] * 50
            + ["region=us-east-1"] * 50
            + [
                f"q={quote(' '.join('x' * 99))}",
                "nvlink=true",
                "nvswitch=true",
                "fabric=infiniband",
                "max_gpu_hour=1e308",
                "geo=eu",
                "available=true",
                "sort=-nvlink_bw",
                "page_size=200",
            ]
        )
    )
    rng.shuffle(out)
    return out


def find_security_figure() -> dict | None:
    """The figure the security tests write under var/ (var/security/hostile_queries.json)."""
    for path in sorted((ROOT / "var").glob("**/*hostile*")):
        if "bench" in path.parts or not path.is_file() or path.stat().st_size > 50_000_000:
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        return {"path": str(path.relative_to(ROOT)), "data": data}
    return None


def security_queries(figure: dict | None) -> list[tuple[str, str]]:
    """(endpoint, query) pairs the security tests found slowest, if their file says so."""
    if not figure or not isinstance(figure["data"], dict):
        return []
    pairs = []
    for endpoint, entry in (figure["data"].get("endpoints") or {}).items():
        for item in entry.get("slowest") or []:
            if isinstance(item, dict) and isinstance(item.get("query"), str):
                pairs.append((endpoint, item["query"]))
    return pairs


def on_the_wire(query: str) -> str:
    """What a client puts in the request line: non-ASCII, spaces and controls percent-encoded."""
    return quote(query, safe="!$&'()*+,-./:;=?@_~%[]")


def refused_by_gunicorn(headers: dict) -> bool:
    """gunicorn answers an over-long request line itself (414): no Django security headers."""
    return not any(k.lower() == "x-content-type-options" for k in headers)


class InProcess:
    """Django's test client in this process: the same settings, no request-line limit."""

    def __init__(self) -> None:
        import logging

        setup_django(migrate=False)
        from django.test import Client

        logging.getLogger("django.request").setLevel(logging.ERROR)
        logging.getLogger("django.security").setLevel(logging.ERROR)
        self.client = Client(raise_request_exception=False)

    def fetch(self, path: str) -> tuple[int, float]:
        start = time.perf_counter()
        response = self.client.get(path)
        return response.status_code, time.perf_counter() - start


def time_hostile(
    base: str,
    inproc: InProcess,
    requests: list[tuple[str, str, str]],
    defaults: dict[str, dict[str, float]],
    report: Report,
) -> None:
    """Each hostile request once through gunicorn (or, refused there, through Django alone)."""
    timed = []  # [ratio to the filter page, seconds, how, status, endpoint, query, origin]
    refused = 0
    for endpoint, query, origin in requests:
        status, headers, _, elapsed = fetch(f"{base}{endpoint}?{on_the_wire(query)}")
        how = "gunicorn"
        if status in (400, 414, 431) and refused_by_gunicorn(headers):
            refused += 1
            status, elapsed = inproc.fetch(f"{endpoint}?{query}")
            how = "in-process"
        timed.append([elapsed / defaults["/"][how], elapsed, how, status, endpoint, query, origin])
    timed.sort(key=lambda item: item[0], reverse=True)
    for item in timed[:3]:  # the slowest again: the median of three
        _, first, how, _, endpoint, query, _ = item
        again = []
        for _ in range(2):
            if how == "gunicorn":
                again.append(fetch(f"{base}{endpoint}?{on_the_wire(query)}")[3])
            else:
                again.append(inproc.fetch(f"{endpoint}?{query}")[1])
        item[1] = median([first, *again])
        item[0] = item[1] / defaults["/"][how]
    timed.sort(key=lambda item: item[0], reverse=True)
    ratio, seconds, how, status, endpoint, query, origin = timed[0]
    shown = f"{endpoint}?{query[:90]}{'...' if len(query) > 90 else ''}"
    report.add(
        f"slowest of {len(timed)} hostile requests / default filter page median",
        f"{ratio:.2f}x ({ms(seconds)} vs {ms(defaults['/'][how])}, {how})",
        "<= 10x",
        ratio <= 10,
        f"{shown!r} [{origin}, HTTP {status}]",
    )
    fives = [t for t in timed if t[3] >= 500]
    report.add(
        "hostile requests answered 5xx",
        f"{len(fives)} of {len(timed)}",
        "0",
        not fives,
        "; ".join(f"{t[4]}?{t[5][:60]!r}" for t in fives[:3]),
    )
    report.info(
        "hostile requests gunicorn refused itself (request line > 4094 bytes)",
        f"{refused} of {len(timed)}",
        "timed through Django in-process instead",
    )
    # Per endpoint: is it the hostile input, or is the endpoint slow anyway?
    for endpoint in sorted({t[4] for t in timed}):
        worst = max((t for t in timed if t[4] == endpoint), key=lambda t: t[1])
        own = defaults.get(endpoint, {}).get(worst[2])
        if own:
            report.info(
                f"{endpoint}: slowest hostile / the same endpoint without parameters",
                f"{worst[1] / own:.2f}x ({ms(worst[1])} vs {ms(own)}, {worst[2]})",
            )
    report.details["hostile_slowest"] = [
        {
            "ratio": round(t[0], 2),
            "s": round(t[1], 4),
            "how": t[2],
            "status": t[3],
            "url": f"{t[4]}?{t[5][:300]}",
            "origin": t[6],
        }
        for t in timed[:10]
    ]


def endpoint_defaults(base: str, inproc: InProcess, endpoints: list[str], n: int) -> dict:
    """Median latency of each endpoint without parameters, one client, uncached."""
    out = {}
    for endpoint in endpoints:
        count = n if endpoint == "/" else max(2, n // 3)
        served = [fetch(f"{base}{endpoint}?utm_content=seq{i}")[3] for i in range(count)]
        local = [inproc.fetch(f"{endpoint}?utm_content=ip{i}")[1] for i in range(count)]
        out[endpoint] = {"gunicorn": median(served[1:]), "in-process": median(local[1:])}
    return out


# -- the cache check ---------------------------------------------------------------------------


def busting_works() -> tuple[bool, str, list[str]]:
    """Does a new `utm_content` value make the page render (run SQL) again? Also the SQL it
    ran, as plain statements, for the SQL floor."""
    setup_django()
    from django.conf import settings
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(raise_request_exception=False)
    client.get("/?utm_content=probe-a")
    with CaptureQueriesContext(connection) as ctx:
        response = client.get("/?utm_content=probe-b")
    n = len(ctx.captured_queries)
    cache = getattr(settings, "PAGE_CACHE_SECONDS", None)
    note = f"{n} SQL statements for a fresh utm_content value, HTTP {response.status_code}"
    if cache is not None:
        note += f"; PAGE_CACHE_SECONDS={cache}"
    from bench.listing import replayable

    statements = [replayable(q["sql"]) for q in ctx.captured_queries]
    return n >= 3 and response.status_code == 200, note, statements


def main(argv: list[str] | None = None) -> int:
    quick = quick_mode(argv)
    duration, runs = (8, 1) if quick else (30, 3)
    print(
        f"== HTTP under load: gunicorn ({WORKERS} sync workers, CPU 0) vs wrk (CPU 1), "
        f"{runs} x {duration} s per scenario",
        flush=True,
    )
    import shutil

    report = Report("http_load")
    if not shutil.which("wrk"):
        report.add("wrk installed", "no", "yes", False, "apt-get install -y wrk")
        report.save()
        return 1
    env = bench_env()
    if env.get("REDIS_URL"):
        try:
            import redis

            redis.Redis.from_url(env["REDIS_URL"]).flushdb()  # our own DB (9) only
            report.info("cache", f"Redis ({env['REDIS_URL']}), flushed before the run")
        except Exception as exc:
            report.info("cache", f"Redis unreachable ({exc}); local memory per worker")
    else:
        report.info("cache", "local memory, one per worker")
    busts, bust_note, page_sql = busting_works()
    report.add(
        "uncached scenarios really uncached (new utm_content runs SQL)",
        "yes" if busts else "no",
        "yes",
        busts,
        bust_note,
    )

    with Gunicorn(workers=WORKERS) as django:
        base = django.url
        status, headers, page, _ = fetch(base + "/")
        if status != 200:
            report.add("default page answers", str(status), "200", False)
            report.save()
            return 1
        saved = VAR / "default-page.html"
        saved.write_bytes(page)
        etag = headers.get("ETag") or headers.get("Etag")
        nowork_env = {
            "BENCH_NOWORK_FILE": str(saved),
            "BENCH_NOWORK_CONTENT_TYPE": headers.get("Content-Type", "text/html; charset=utf-8"),
        }
        # The htmx fragment at the default 50 rows, gzipped (issue 22 item 5; the old share of
        # the page's bytes is retired: a row's visible text alone was over its budget).
        _, _, fragment, _ = fetch(base + "/", {"HX-Request": "true"})
        (VAR / "default-fragment.html").write_bytes(fragment)
        fragment_gz = len(gzip.compress(fragment, 6))
        report.add(
            "htmx fragment, gzipped, default 50 rows",
            f"{fragment_gz / 1024:.1f} KB ({len(fragment) / 1024:.1f} KB raw)",
            "<= 5 KB",
            fragment_gz <= 5 * 1024,
        )
        report.info(
            "htmx fragment / full page bytes",
            f"{len(fragment) / len(page) * 100:.1f}% raw, "
            f"{fragment_gz / len(gzip.compress(page, 6)) * 100:.1f}% gzipped",
        )

        floor_sql = VAR / "default-page-sql.json"
        floor_sql.write_text(json.dumps(page_sql))
        with (
            Gunicorn(
                "bench.nowork_wsgi:application",
                workers=WORKERS,
                env=nowork_env,
                ready_path="/",
                name="nowork",
            ) as nowork,
            Gunicorn(
                "bench.sqlfloor_wsgi:application",
                workers=WORKERS,
                env=nowork_env | {"BENCH_FLOOR_SQL": str(floor_sql)},
                ready_path="/",
                name="sqlfloor",
            ) as floor,
        ):
            scenarios = {
                "no-work": (nowork.url, ["/"], "cycle", 200, ""),
                "SQL floor": (floor.url, ["/"], "cycle", 200, ""),
                "cached": (base, ["/"], "cycle", 200, ""),
                "uncached": (base, ["/"], "bust", 200, ""),
                "uncached mix": (base, REALISTIC, "bust", 200, ""),
                # The estimator over every synthetic type at 4 node counts (issue 22 item 2).
                "estimate (every type, 4 node counts)": (base, [ESTIMATE], "bust", 200, ""),
            }
            if etag:
                scenarios["conditional (304)"] = (base, ["/"], "conditional", 304, "ETAG")
            results: dict[str, list[dict]] = {name: [] for name in scenarios}
            for run in range(runs):
                for name, (url, paths, mode, expected, header) in scenarios.items():
                    if header == "ETAG":  # the ETag moves with time buckets: a fresh one
                        got = fetch(base + "/")[1]
                        header = f"If-None-Match: {got.get('ETag') or got.get('Etag') or etag}"
                    data = run_wrk(url, paths, mode, expected, duration, header)
                    results[name].append(data)
                    print(
                        f"    run {run + 1} {name:<18} {data['rps']:8.1f} req/s  "
                        f"p50 {data['p50_us'] / 1000:8.1f} ms  errors {data['errors']}  "
                        f"statuses {data['statuses']}",
                        flush=True,
                    )
            rss = django.worker_rss_mib()
            peaks = django.worker_peak_rss_mib()

        def rps(name: str) -> float:
            return median([r["rps"] for r in results[name]])

        for name, data in results.items():
            values = [r["rps"] for r in data]
            errors = sum(r["errors"] for r in data)
            report.add(
                f"{name}: throughput (median of {len(data)}) / errors",
                f"{median(values):.1f} req/s {spread(values)}, p50 "
                f"{median([r['p50_us'] for r in data]) / 1000:.1f} ms, p99 "
                f"{median([r['p99_us'] for r in data]) / 1000:.1f} ms / {errors} errors",
                "0 errors",
                errors == 0,
                ", ".join(
                    f"{k}: {v}"
                    for k, v in sorted(
                        {
                            k: sum(r["statuses"].get(k, 0) for r in data)
                            for r in data
                            for k in r["statuses"]
                        }.items()
                    )
                ),
            )
        nowork_rps = rps("no-work")
        floor_rps = rps("SQL floor")
        cached_ratio = rps("cached") / nowork_rps
        report.add(
            "cached / no-work throughput",
            f"{cached_ratio:.4f}x ({rps('cached'):.1f} vs {nowork_rps:.0f} req/s)",
            ">= 0.6x",
            cached_ratio >= 0.6,
        )
        # Issue 22: the uncached page against its own SQL under the same load (the old target
        # against the no-work view is retired: the SQL floor itself was below it).
        floor_ratio = rps("uncached") / floor_rps
        report.add(
            "uncached / SQL floor throughput",
            f"{floor_ratio:.2f}x ({rps('uncached'):.1f} vs {floor_rps:.1f} req/s; "
            f"{len(page_sql)} statements)",
            ">= 0.5x",
            floor_ratio >= 0.5,
            "the SQL floor: the default page's own SQL and its saved bytes, no Django "
            "(bench/sqlfloor_wsgi.py)",
        )
        report.info(
            "uncached mix / SQL floor of the default page",
            f"{rps('uncached mix') / floor_rps:.2f}x (other filters run other SQL)",
        )
        report.info(
            "SQL floor / no-work throughput",
            f"{floor_rps / nowork_rps:.4f}x ({floor_rps:.1f} vs {nowork_rps:.0f} req/s)",
        )
        if etag:
            cost = rps("uncached") / rps("conditional (304)")
            report.add(
                "conditional GET: 304 cost / full render cost (1 / throughput)",
                f"{cost * 100:.1f}% (304: {rps('conditional (304)'):.1f} req/s, full "
                f"render: {rps('uncached'):.1f} req/s)",
                "< 10%",
                cost < 0.10,
                f"{sum(r['ok'] for r in results['conditional (304)'])} answered 304, "
                f"{sum(r.get('refreshed', 0) for r in results['conditional (304)'])} answered "
                "200 with a new ETag (time bucket or data version moved)",
            )
        else:
            report.add(
                "conditional GET: 304 cost / full render cost",
                "not implemented",
                "< 10%",
                False,
                "the default page sends no ETag",
            )
        report.info(
            "gunicorn RSS after the load (master, workers)", ", ".join(f"{m:.0f} MiB" for m in rss)
        )
        worst = max(peaks[1:] or [0.0])
        report.add(
            "peak resident memory per gunicorn worker (all load scenarios, the estimate included)",
            ", ".join(f"{m:.0f} MiB" for m in peaks[1:]) or "not read",
            "<= 250 MB each",
            bool(peaks[1:]) and worst * 1.048576 <= 250,
            "VmHWM of each worker after every scenario",
        )
        report.details["wrk"] = results

        # Hostile query strings: the security tests' slowest, and ~100 generated here.
        figure = find_security_figure()
        theirs = security_queries(figure)
        if figure:
            data = figure["data"]
            report.info(
                "the security tests' figure",
                f"{figure['path']}: slowest {data.get('slowest_seconds')} s",
                str(data.get("what", ""))[:160],
            )
        else:
            report.info(
                "the security tests' figure",
                "none under var/",
                "hostile query strings generated here only",
            )
        generated = hostile_queries(random.Random(11))
        if quick:
            generated, theirs = generated[:30], theirs[::4]
        requests = [(e, q, "generated") for q in generated for e in ("/", "/api/instances")]
        requests += [(e, q, "security tests") for e, q in theirs]
        inproc = InProcess()
        endpoints = list(dict.fromkeys(["/"] + [e for e, _, _ in requests]))
        defaults = endpoint_defaults(base, inproc, endpoints, 5 if quick else 11)
        for endpoint, by in defaults.items():
            report.info(
                f"{endpoint} without parameters, one client, uncached: median",
                f"{ms(by['gunicorn'])} via gunicorn, {ms(by['in-process'])} in-process",
            )
        time_hostile(base, inproc, requests, defaults, report)
    report.save()
    return 0 if all(f.passed is not False for f in report.figures) else 1


if __name__ == "__main__":
    sys.exit(main())
