"""HTTP under load: gunicorn on CPU 0, wrk on CPU 1 (issue 11, item 4; issue 27).

    .venv/bin/python -m bench.http_load [--quick]

(Not `bench/http.py`: run as a script it would shadow the standard library's `http`.)

gunicorn (sync workers, `--preload`, WORKERS of them, pinned to CPU 0) serves the benchmark
database with rate limits off; wrk (one thread, CONNECTIONS connections, pinned to CPU 1) drives
it for DURATION seconds per run, RUNS runs per scenario, the scenarios taken in turn (round
robin) so that drift hits them alike. A Lua script (bench/wrk/interleave.lua) cycles through
the scenario's paths and counts every status: any answer other than the expected one, and any
socket error, is an error. Three servers:

- no-work: the default page's bytes, saved, served by a tiny WSGI app (bench/nowork_wsgi.py)
  under the same gunicorn settings: the ceiling;
- the floor of a cache hit (bench/floor_wsgi.py, no Django): the data version read from
  PostgreSQL and the same bytes read from Redis, which every hit must do; with the ceiling it
  says how far Django's own share could shrink at best (when Redis is in use);
- the site as configured: the response cache in Redis (DB 9, flushed first);
- the site with the response cache off (`PAGE_CACHE_SECONDS=0`): every request renders, while
  ETags and 304s work as ever.

Both of the site's servers take request lines of any length (`--limit-request-line 0`), so the
junk parameters and the hostile query strings below reach Django instead of gunicorn's own 414.

Scenarios: no-work `/`; cached `/` (checked to be a cache hit: in-process, a second request
sends only the data version's read, and under load Redis counts a hit per request); conditional
`/` with `If-None-Match` (304) against rendering `/` (cache off); a mix of realistic filter URLs
and the estimator over every type, rendered (cache off); then 200 requests, each a filter URL
with 8 KB of junk (unknown) parameters, on the cached server (the junk is dropped, the filter
renders once). Each worker's peak memory (VmHWM) is read after every scenario.

Also: the htmx fragment's gzipped size, and the slowest hostile query string (read from the
security tests' figure under var/ if one exists, plus ~100 generated here, timed against the
server with the cache off, and in-process only if gunicorn refused one) against the default
page's median.
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
from bench.inprocess import request
from bench.server import Gunicorn, pinned

WORKERS = 2
CONNECTIONS = 4
LUA = ROOT / "bench" / "wrk" / "interleave.lua"
# gunicorn refuses request lines over 4094 bytes itself (414) unless told otherwise: the site's
# servers here take any length, so the junk and hostile query strings reach Django.
LONG_LINES = ["--limit-request-line", "0"]
JUNK_REQUESTS = 200
JUNK_BYTES = 8 * 1024
MEMORY_TARGET_MB = 250

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
    """Django's test client in this process: the same settings with the response cache off
    (as the server the hostile requests go to), no request-line limit."""

    def __init__(self) -> None:
        import logging

        setup_django(migrate=False)
        from django.test import Client
        from django.test.utils import override_settings

        logging.getLogger("django.request").setLevel(logging.ERROR)
        logging.getLogger("django.security").setLevel(logging.ERROR)
        override_settings(PAGE_CACHE_SECONDS=0).enable()
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
    """Median latency of each endpoint without parameters, one client, rendered each time
    (`base` is the server with the response cache off, and so is `inproc`)."""
    out = {}
    for endpoint in endpoints:
        count = n if endpoint == "/" else max(2, n // 3)
        served = [fetch(f"{base}{endpoint}")[3] for _ in range(count)]
        local = [inproc.fetch(endpoint)[1] for _ in range(count)]
        out[endpoint] = {"gunicorn": median(served[1:]), "in-process": median(local[1:])}
    return out


# -- the cache check and the junk ---------------------------------------------------------


def cache_hit_check() -> tuple[bool, str]:
    """In-process, the default page twice: the second must be a cache hit (the data version's
    read and nothing else), or the "cached" scenario would measure renders."""
    setup_django()
    from django.test import Client

    client = Client(raise_request_exception=False)
    first = request(client, "/")
    second = request(client, "/")
    ok = second.status == 200 and not second.rendered
    note = (
        f"the first / sent {len(first.statements)} statement(s) in {ms(first.seconds)}, the "
        f"second {len(second.statements)} ({second.version_reads} the version read) in "
        f"{ms(second.seconds)}, HTTP {second.status}"
    )
    return ok, note


def junk_urls(n: int, seed: int = 2727) -> list[str]:
    """`n` filter URLs (every other one on the API), each followed by JUNK_BYTES of unknown
    parameters: half as ~125 short names, half as one long value."""
    from bench.cold import filter_queries

    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    out = []
    for i, query in enumerate(filter_queries(n, seed=seed)):
        if i % 4 < 2:
            parts, size = [], 0
            while size < JUNK_BYTES:
                name = "z" + "".join(rng.choices(alphabet, k=7))
                part = f"{name}={''.join(rng.choices(alphabet, k=56))}"
                parts.append(part)
                size += len(part) + 1
            junk = "&".join(parts)[:JUNK_BYTES]
        else:
            junk = "junk=" + "".join(rng.choices(alphabet, k=JUNK_BYTES - 5))
        path = "/" if i % 2 == 0 else "/api/instances"
        out.append(f"{path}?{query}&{junk}")
    return out


def send_junk(base: str, urls: list[str]) -> dict:
    """Each URL once, CONNECTIONS at a time; statuses and latencies."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(CONNECTIONS) as pool:
        answers = list(pool.map(lambda url: fetch(base + url)[::3], urls))
    statuses: dict[str, int] = {}
    for status, _ in answers:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    return {
        "requests": len(answers),
        "statuses": statuses,
        "p50_s": median([t for _, t in answers]),
        "max_s": max(t for _, t in answers),
        "query_bytes": [min(len(u) for u in urls), max(len(u) for u in urls)],
    }


def redis_hits(url: str | None) -> int | None:
    """Redis's count of keyspace hits (server-wide), or None without Redis."""
    if not url:
        return None
    try:
        import redis

        return int(redis.Redis.from_url(url).info("stats")["keyspace_hits"])
    except Exception:
        return None


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
    redis_url = env.get("REDIS_URL")
    if redis_url:
        try:
            import redis

            redis.Redis.from_url(redis_url).flushdb()  # our own DB (9) only
            report.info("cache", f"Redis ({redis_url}), flushed before the run")
        except Exception as exc:
            redis_url = None
            report.info("cache", f"Redis unreachable ({exc}); local memory per worker")
    else:
        report.info("cache", "local memory, one per worker")
    hit, hit_note = cache_hit_check()
    report.add(
        "cached /: a repeated request is a cache hit (in-process)",
        "yes" if hit else "no",
        "yes (only the data version is read)",
        hit,
        hit_note,
    )
    junk = junk_urls(60 if quick else JUNK_REQUESTS)

    with (
        Gunicorn(workers=WORKERS, args=LONG_LINES) as site,
        Gunicorn(
            workers=WORKERS,
            args=LONG_LINES,
            env={"PAGE_CACHE_SECONDS": "0"},
            name="django-cache-off",
        ) as render,
    ):
        base = site.url
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

        # Each worker's high-water mark, read after every scenario (of both site servers).
        memory: dict[str, dict[str, list[float]]] = {}

        def read_memory(after: str) -> None:
            memory[after] = {s.name: s.worker_peak_rss_mib()[1:] for s in (site, render)}

        read_memory("start")
        cached_hits = cached_requests = 0
        floor_env = nowork_env | {
            "BENCH_FLOOR_DATABASE_URL": env["DATABASE_URL"],
            "BENCH_FLOOR_REDIS_URL": redis_url or "",
        }
        with (
            Gunicorn(
                "bench.nowork_wsgi:application",
                workers=WORKERS,
                env=nowork_env,
                ready_path="/",
                name="nowork",
            ) as nowork,
            Gunicorn(
                "bench.floor_wsgi:application" if redis_url else "bench.nowork_wsgi:application",
                workers=WORKERS,
                env=floor_env,
                ready_path="/",
                name="floor",
            ) as floor,
        ):
            scenarios = {
                "no-work": (nowork.url, ["/"], "cycle", 200, ""),
                "cached /": (base, ["/"], "cycle", 200, ""),
                **(
                    {
                        "floor of a hit (version read + Redis GET)": (
                            floor.url,
                            ["/"],
                            "cycle",
                            200,
                            "",
                        )
                    }
                    if redis_url
                    else {}
                ),
                "render / (cache off)": (render.url, ["/"], "cycle", 200, ""),
                "render mix (cache off)": (render.url, REALISTIC, "cycle", 200, ""),
                # The estimator over every synthetic type at 4 node counts (issue 22 item 2).
                "estimate, every type, 4 node counts (cache off)": (
                    render.url,
                    [ESTIMATE],
                    "cycle",
                    200,
                    "",
                ),
            }
            if etag:
                scenarios["conditional / (304)"] = (base, ["/"], "conditional", 304, "ETAG")
            results: dict[str, list[dict]] = {name: [] for name in scenarios}
            for run in range(runs):
                for name, (url, paths, mode, expected, header) in scenarios.items():
                    if header == "ETAG":  # the ETag moves with time buckets: a fresh one
                        got = fetch(base + "/")[1]
                        header = f"If-None-Match: {got.get('ETag') or got.get('Etag') or etag}"
                    before = redis_hits(redis_url) if name == "cached /" else None
                    data = run_wrk(url, paths, mode, expected, duration, header)
                    if before is not None:
                        after = redis_hits(redis_url)
                        if after is not None:
                            cached_hits += after - before
                            cached_requests += data["requests"]
                    results[name].append(data)
                    read_memory(name)
                    print(
                        f"    run {run + 1} {name:<24} {data['rps']:8.1f} req/s  "
                        f"p50 {data['p50_us'] / 1000:8.1f} ms  errors {data['errors']}  "
                        f"statuses {data['statuses']}",
                        flush=True,
                    )

        # Junk: filter URLs carrying 8 KB of unknown parameters each, on the cached server.
        sent = send_junk(base, junk)
        read_memory("junk parameters")
        print(f"    junk parameters: {sent}", flush=True)

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
        ok_junk = sent["statuses"].get("200", 0)
        report.add(
            f"{sent['requests']} filter URLs with {JUNK_BYTES // 1024} KB of junk parameters "
            "each (cached server): answered 200",
            f"{ok_junk} of {sent['requests']} (p50 {ms(sent['p50_s'])}, slowest "
            f"{ms(sent['max_s'])})",
            f"{sent['requests']} of {sent['requests']}",
            ok_junk == sent["requests"],
            f"statuses {sent['statuses']}; query strings {sent['query_bytes'][0]:,}-"
            f"{sent['query_bytes'][1]:,} bytes; the unknown names are dropped, each filter "
            "renders once",
        )
        nowork_rps = rps("no-work")
        cached_ratio = rps("cached /") / nowork_rps
        hits_note = (
            f"Redis counted {cached_hits:,} hits during the cached runs' {cached_requests:,} "
            "requests"
            if redis_url
            else "local-memory cache: hits not counted"
        )
        floor_name = "floor of a hit (version read + Redis GET)"
        if floor_name in results:
            floor_ratio = rps(floor_name) / nowork_rps
            hits_note += (
                f"; the floor (the version read and the Redis GET alone, no Django) reaches "
                f"{floor_ratio:.2f}x no-work ({rps(floor_name):.0f} req/s), and the cached page "
                f"{rps('cached /') / rps(floor_name):.2f}x the floor"
            )
            report.info(
                "floor of a cache hit / no-work throughput (no Django: the data version read "
                "from PostgreSQL and the body from Redis)",
                f"{floor_ratio:.2f}x ({rps(floor_name):.0f} vs {nowork_rps:.0f} req/s); the "
                f"cached page reaches {rps('cached /') / rps(floor_name):.2f}x the floor",
            )
        report.add(
            "cached / no-work throughput",
            f"{cached_ratio:.4f}x ({rps('cached /'):.1f} vs {nowork_rps:.0f} req/s)",
            ">= 0.6x",
            cached_ratio >= 0.6,
            hits_note,
            key="27.2",
        )
        if redis_url:
            share = cached_hits / cached_requests if cached_requests else 0.0
            report.add(
                "cached /: Redis hits per request under load",
                f"{share:.3f} ({cached_hits:,} hits, {cached_requests:,} requests)",
                ">= 0.99 (every request a hit)",
                share >= 0.99,
                "INFO stats keyspace_hits, server-wide, before and after each cached run",
            )
        report.info(
            "render mix (cache off) / render / (cache off) throughput",
            f"{rps('render mix (cache off)') / rps('render / (cache off)'):.2f}x "
            "(other filters run other SQL)",
        )
        if etag:
            cost = rps("render / (cache off)") / rps("conditional / (304)")
            report.add(
                "conditional GET: 304 time / full render time of / (1 / throughput)",
                f"{cost * 100:.1f}% (304: {rps('conditional / (304)'):.1f} req/s, full "
                f"render: {rps('render / (cache off)'):.1f} req/s)",
                "<= 10%",
                cost <= 0.10,
                f"{sum(r['ok'] for r in results['conditional / (304)'])} answered 304, "
                f"{sum(r.get('refreshed', 0) for r in results['conditional / (304)'])} answered "
                "200 with a new ETag (time bucket or data version moved)",
                key="27.3",
            )
        else:
            report.add(
                "conditional GET: 304 time / full render time",
                "not implemented",
                "<= 10%",
                False,
                "the default page sends no ETag",
                key="27.3",
            )
        report.details["wrk"] = results
        report.details["junk"] = sent

        # Hostile query strings: the security tests' slowest, and ~100 generated here, each
        # rendered (the server and the in-process client with the response cache off).
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
        defaults = endpoint_defaults(render.url, inproc, endpoints, 5 if quick else 11)
        for endpoint, by in defaults.items():
            report.info(
                f"{endpoint} without parameters, one client, cache off: median",
                f"{ms(by['gunicorn'])} via gunicorn, {ms(by['in-process'])} in-process",
            )
        time_hostile(render.url, inproc, requests, defaults, report)
        read_memory("hostile query strings")
        report.info(
            "gunicorn RSS at the end (master, workers)",
            "; ".join(
                f"{s.name}: " + ", ".join(f"{m:.0f} MiB" for m in s.worker_rss_mib())
                for s in (site, render)
            ),
        )

    worst_by_scenario = {
        after: max((m for workers in by.values() for m in workers), default=0.0)
        for after, by in memory.items()
    }
    final = memory.get("hostile query strings") or memory[list(memory)[-1]]
    workers = [m for by in final.values() for m in by]
    worst = max(workers, default=0.0)
    report.add(
        "peak resident memory per gunicorn worker, after every scenario (junk parameters and "
        "hostile query strings included)",
        "; ".join(f"{name}: " + ", ".join(f"{m:.0f} MiB" for m in by) for name, by in final.items())
        or "not read",
        f"<= {MEMORY_TARGET_MB} MB each",
        bool(workers) and worst * 1.048576 <= MEMORY_TARGET_MB,
        "VmHWM of each worker of both site servers; worst after each scenario: "
        + ", ".join(f"{after} {m:.0f}" for after, m in worst_by_scenario.items())
        + " MiB",
        key="27.4",
    )
    report.details["memory_vmhwm_mib"] = memory
    report.save()
    return 0 if all(f.passed is not False for f in report.figures) else 1


if __name__ == "__main__":
    sys.exit(main())
