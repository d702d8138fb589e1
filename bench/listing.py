"""The filter page and the API at the synthetic catalog's size, in-process (issue 11, item 2).

    .venv/bin/python -m bench.listing [--quick]

Measured with Django's test client against the benchmark database (run bench.synthetic first):

- SQL statements per request at 500 and at 5,000 visible rows (same count = constant in the
  number of rows), for the default page, a 200-row page and the API;
- lazy loads: every request again with Django 6.1's fetch mode set to FETCH_RAISE for every
  QuerySet (so a lazy related-object or deferred-field load raises FieldFetchBlocked), and
  statement shapes the page repeats (an N+1 the count alone does not show);
- the pagination COUNT against the page query, each statement timed on its own (target <= 2x;
  a page that counts its rows in a query it runs anyway has no COUNT of its own);
- the planner's and the estimator's first page against replaying the very SQL they ran through
  a raw cursor, in the same run (median of N each; target <= 3x);
- cold renders (issue 27): `/`, `/api/instances` and the estimator's first page, each requested
  right after a real write (bench/inprocess.py), so the response cache holds nothing under the
  data version they read: their statements (the default page: at most 4, the version read
  included, at every catalog size) and their server time. At `--scale=N` the cold default
  page is compared with the same page at 5,000 types, measured by `bench.listing --baseline` in
  the same run (target <= 12x).

Everything but the cold renders runs with the cache replaced by DummyCache, so every request
renders; the cold renders go through the real response cache (Redis DB 9) and miss it.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import re
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    DEFAULT_SCALE,
    PY,
    ROOT,
    SCALE,
    Report,
    median,
    ms,
    quick_mode,
    setup_django,
)
from bench.inprocess import Writer, replay, request

DEFAULT_URLS = {
    "filter page": "/",
    "filter page, 200 rows": "/?page_size=200",
    "filter page, filtered": "/?nvlink=true&fabric=infiniband&fabric=roce&price_kind=on-demand"
    "&max_gpu_hour=4&sort=-fabric_gbps",
    "htmx fragment": "/?gpu=h100-sxm",  # sent with HX-Request below
    "API": "/api/instances",
    "API, 200 rows": "/api/instances?page_size=200",
    "API, filtered": "/api/instances?gpu=h100-sxm&gpu=h200-sxm&multi_node=true&geo=eu",
}
PRICE_FILTERED = "/?price_kind=on-demand&max_gpu_hour=3&geo=eu&available=true"
DECLARE = re.compile(r'^DECLARE "[^"]+" NO SCROLL CURSOR WITH(?:OUT)? HOLD FOR ', re.I)
# The table a statement reads: its first qualified column's, else the one after FROM.
TABLE = re.compile(r'^[^"]*?"(\w+)"\.|\bFROM "?(\w+)')
LITERALS = re.compile(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b")


PLAN = "/api/plan?gpus=64&gpu=h100-sxm&gpu=h200-sxm"
# The estimator's first page at the catalog's size and 4 node counts (issue 22 item 2).
ESTIMATE = "/api/estimate?params_b=70&mode=train-fsdp&nodes=1&nodes=2&nodes=4&nodes=8"
# Issue 27: the default page's statements on a cold render, the version read included.
DEFAULT_STATEMENTS = 4
# Issue 27: the cold default page at --scale=N against the same page at 5,000 types.
GROWTH_TARGET = 12


def statement_shape(sql: str) -> str:
    """The SQL with literals blanked, to spot one statement run again and again (N+1)."""
    return LITERALS.sub("?", DECLARE.sub("", sql))


def replayable(sql: str) -> str:
    """A captured statement as a plain query: a server-side cursor becomes its SELECT."""
    return DECLARE.sub("", sql)


class Bench:
    def __init__(self, quick: bool) -> None:
        import logging

        from django.db import connection

        # A lazy load under FETCH_RAISE is a finding reported once, not a traceback per request.
        logging.getLogger("django.request").setLevel(logging.CRITICAL)
        from django.test import Client

        self.connection = connection
        self.client = Client()
        self.quick = quick

    def get(self, url: str, **headers):
        return self.client.get(url, headers=headers or None)

    def timed_get(self, url: str) -> float:
        start = time.perf_counter()
        response = self.get(url)
        elapsed = time.perf_counter() - start
        if response.status_code != 200:
            raise RuntimeError(f"{url}: HTTP {response.status_code}")
        return elapsed

    def capture(self, url: str, **headers) -> tuple[object, list[dict]]:
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(self.connection) as ctx:
            response = self.get(url, **headers)
        return response, list(ctx.captured_queries)

    def raising(self, url: str, **headers) -> str:
        """Run the request with lazy loads forbidden; the first lazy load, or ''.

        Every new QuerySet starts in FETCH_RAISE, and FETCH_ONE itself (the default, which
        querysets built at import time, such as a FilterSet's choices, already carry) raises
        too. FETCH_PEERS, a deliberate batched load, is left alone.
        """
        from django.core.exceptions import FieldFetchBlocked
        from django.db.models import fetch_modes, query

        saved_default = query.DEFAULT_FETCH_MODE
        saved_fetch = fetch_modes.FetchOne.fetch
        query.DEFAULT_FETCH_MODE = fetch_modes.FETCH_RAISE
        fetch_modes.FetchOne.fetch = fetch_modes.FetchRaise.fetch
        try:
            self.get(url, **headers)
        except FieldFetchBlocked as exc:
            return str(exc)
        finally:
            query.DEFAULT_FETCH_MODE = saved_default
            fetch_modes.FetchOne.fetch = saved_fetch
        return ""

    def replay(self, statements: list[str]) -> float:
        start = time.perf_counter()
        with self.connection.cursor() as cursor:
            for sql in statements:
                cursor.execute(sql)
                if cursor.description is not None:
                    cursor.fetchall()
        return time.perf_counter() - start

    def time_statement(self, sql: str, n: int) -> float:
        return median([self.replay([sql]) for _ in range(n)])


def set_visible(n: int) -> int:
    """Hide every visible instance type but the first n (by id); inside a rolled-back block."""
    from offerings.models import InstanceType

    ids = list(InstanceType.objects.visible().order_by("pk").values_list("pk", flat=True))
    InstanceType.objects.filter(pk__in=ids[n:]).update(is_hidden=True)
    return InstanceType.objects.visible().count()


def query_counts(bench: Bench, report: Report, scales: list[int]) -> None:
    from django.db import transaction

    counts: dict[str, dict[int, int]] = {name: {} for name in DEFAULT_URLS}
    lazy: dict[str, str] = {}
    repeats: dict[str, tuple[int, str]] = {}
    for scale in scales:
        with transaction.atomic():
            visible = set_visible(scale)
            for name, url in DEFAULT_URLS.items():
                headers = {"HX-Request": "true"} if name == "htmx fragment" else {}
                bench.get(url, **headers)  # warm caches of the process (templates, content types)
                response, captured = bench.capture(url, **headers)
                if response.status_code != 200:
                    report.add(
                        f"{name} at {visible:,} rows: status",
                        str(response.status_code),
                        "200",
                        False,
                        url,
                    )
                counts[name][visible] = len(captured)
                shapes: dict[str, int] = {}
                for q in captured:
                    shape = statement_shape(q["sql"])
                    shapes[shape] = shapes.get(shape, 0) + 1
                worst = max(shapes.items(), key=lambda item: item[1])
                if worst[1] > repeats.get(name, (0, ""))[0]:
                    repeats[name] = (worst[1], worst[0])
                blocked = bench.raising(url, **headers)
                if blocked:
                    lazy.setdefault(name, blocked)
            transaction.set_rollback(True)
    for name, by_scale in counts.items():
        values = list(by_scale.values())
        shown = " vs ".join(f"{n} at {rows:,} rows" for rows, n in by_scale.items())
        report.add(
            f"SQL statements, {name}",
            shown,
            "same count at every size",
            len(set(values)) == 1,
            DEFAULT_URLS[name],
        )
    for name in DEFAULT_URLS:
        n, shape = repeats.get(name, (1, ""))
        report.add(
            f"most repeated statement, {name}",
            f"{n}x",
            "<= 3x (no N+1 over any table)",
            n <= 3,
            shape[:160] + ("..." if len(shape) > 160 else "") if n > 3 else "",
        )
    for name in DEFAULT_URLS:
        blocked = lazy.get(name, "")
        report.add(f"lazy loads under FETCH_RAISE, {name}", blocked or "none", "none", not blocked)
    report.details["query_counts"] = counts
    report.details["lazy_loads"] = lazy


def other_pages(bench: Bench, report: Report) -> None:
    """The other pages that list rows: statement count and lazy loads at full size."""
    from offerings.models import InstanceType

    sample = InstanceType.objects.visible().filter(provider__slug="aws").order_by("pk").first()
    sample = sample or InstanceType.objects.visible().order_by("pk").first()
    two = list(InstanceType.objects.visible().order_by("pk").values_list("pk", flat=True)[:2])
    urls = {
        "detail page": f"/instances/{sample.provider.slug}/{sample.slug}/",
        "GPU page": "/gpus/h100-sxm/",
        "provider page": f"/providers/{sample.provider.slug}/",
        "compare": f"/compare/?ids={two[0]},{two[1]}",
        "estimator": "/estimate/",
        "feed": "/feeds/price-changes/",
    }
    for name, url in urls.items():
        try:
            start = time.perf_counter()
            response, captured = bench.capture(url)
            elapsed = time.perf_counter() - start
            blocked = bench.raising(url)
        except Exception as exc:  # a page another session is still writing may not exist yet
            report.add(f"{name}: renders", f"{type(exc).__name__}: {exc}"[:160], "200", False, url)
            continue
        report.add(
            f"{name}: statements / lazy loads under FETCH_RAISE",
            f"{len(captured)} / {blocked or 'none'} ({ms(elapsed)}, HTTP {response.status_code})",
            "no lazy load",
            not blocked and response.status_code == 200,
            url,
        )


def page_vs_replay(
    bench: Bench,
    report: Report,
    url: str,
    label: str,
    n: int,
    target: float | None = None,
    key: str = "",
) -> dict:
    """Server time of a page against replaying its own SQL with a raw cursor, same run
    (a figure with `target`, else information)."""
    for _ in range(2):
        bench.get(url)
    response, captured = bench.capture(url)
    statements = [replayable(q["sql"]) for q in captured]
    bench.replay(statements)
    page_times, replay_times = [], []
    for _ in range(n):  # interleaved, so drift in the machine hits both alike
        page_times.append(bench.timed_get(url))
        replay_times.append(bench.replay(statements))
    page, replayed = median(page_times), median(replay_times)
    ratio = page / replayed
    shown = (
        f"{ratio:.1f}x ({ms(page)} vs {ms(replayed)}, {len(statements)} statements, median of {n})"
    )
    name = f"{label}: server time / replay of its own SQL"
    if target is None:
        report.info(name, shown, "cache off")
    else:
        report.add(name, shown, f"<= {target:g}x", ratio <= target, key=key)
    return {
        "page_s": page,
        "replay_s": replayed,
        "statements": statements,
        "captured": captured,
        "bytes": len(response.content),
    }


def count_vs_page(bench: Bench, report: Report, label: str, measured: dict, n: int) -> None:
    """The pagination COUNT statement against the statement that reads the page's rows."""
    statements = measured["statements"]
    counts = [
        s
        for s in statements
        if s.startswith("SELECT COUNT(*)")
        and '"offerings_instancetype"' in s
        and "GROUP BY" not in s
    ]
    pages = [
        s
        for s in statements
        if s.startswith('SELECT "offerings_instancetype"."id"') and " LIMIT " in s
    ]
    if not pages:
        report.add(
            f"{label}: pagination COUNT / page query", "page query not found", "<= 2x", False
        )
        return
    page_sql = pages[0]
    page_time = bench.time_statement(page_sql, n)
    if not counts:
        report.add(
            f"{label}: pagination COUNT / page query",
            "no COUNT statement: the rows are counted in the page's query of facet and "
            "availability counts, which it runs anyway",
            "<= 2x, or no COUNT of its own",
            True,
        )
        return
    count_sql = counts[0]
    count_time = bench.time_statement(count_sql, n)
    ratio = count_time / page_time
    report.add(
        f"{label}: pagination COUNT / page query",
        f"{ratio:.2f}x ({ms(count_time)} vs {ms(page_time)})",
        "<= 2x",
        ratio <= 2,
    )


def sql_breakdown(bench: Bench, report: Report, label: str, measured: dict, n: int) -> None:
    """Where the page's time goes: the slowest statements, timed one by one, and Python."""
    timings = []
    for sql in dict.fromkeys(measured["statements"]):
        timings.append((bench.time_statement(sql, max(3, n // 3)), sql))
    timings.sort(reverse=True)
    share = measured["replay_s"] / measured["page_s"]
    report.info(
        f"{label}: SQL share of server time (replay / page)",
        f"{share * 100:.0f}% ({ms(measured['replay_s'])} of {ms(measured['page_s'])}; the "
        "rest is Python: forms, template, middleware); slowest statement "
        f"{ms(timings[0][0])} alone",
    )
    top = [{"ms": round(t * 1000, 2), "sql": sql[:400]} for t, sql in timings[:5]]
    for item in top[:3]:
        print(f"      {item['ms']:8.2f} ms  {item['sql'][:150]}")
    report.details.setdefault("slowest_statements", {})[label] = top


def profile(bench: Bench, url: str, label: str, report: Report) -> None:
    """The hottest Python functions of one render, for the diagnosis of a failing ratio."""
    profiler = cProfile.Profile()
    profiler.enable()
    bench.get(url)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(12)
    text = out.getvalue()
    lines = [line for line in text.splitlines() if line.strip() and "/" in line][:12]
    report.details.setdefault("profile_tottime", {})[label] = lines
    print(f"    profile of {label} (tottime, top 8):")
    for line in lines[:8]:
        print("     ", line.strip()[:150].replace(str(ROOT) + "/", ""))


def codebase_fetch_modes(report: Report) -> None:
    """Does the code itself choose fetch modes (Django 6.1) where rows are listed?"""
    uses = []
    for path in (ROOT / "offerings").rglob("*.py"):
        text = path.read_text(errors="replace")
        if "fetch_mode(" in text or "FETCH_PEERS" in text or "FETCH_RAISE" in text:
            uses.append(str(path.relative_to(ROOT)))
    for path in (ROOT / "tests").rglob("*.py"):
        text = path.read_text(errors="replace")
        if "FETCH_RAISE" in text:
            uses.append(str(path.relative_to(ROOT)))
    report.add(
        "code uses Django 6.1 fetch modes (offerings/, tests/)",
        ", ".join(uses) if uses else "no",
        "yes (FETCH_RAISE in the listing tests, FETCH_PEERS where rows are listed)",
        bool(uses),
        ""
        if uses
        else "suggest InstanceType.objects.for_listing().fetch_mode(FETCH_PEERS), "
        "and tests running the pages under FETCH_RAISE",
    )


def vacuum(bench: Bench) -> None:
    with bench.connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) offerings_instancetype")


COLD = {"default filter page": "/", "API default": "/api/instances", "estimator": ESTIMATE}


def cold_pages(bench: Bench, n: int) -> dict[str, dict]:
    """Each page of COLD requested right after a real write, n times, in turn; each request's
    own statements replayed right after it. Medians, and the statements of every request."""
    writer = Writer()
    for url in COLD.values():  # a worker that has served before: templates compiled
        bench.get(url)
    found: dict[str, dict] = {label: {"page": [], "replay": [], "counts": []} for label in COLD}
    try:
        for i in range(n):
            for label, url in COLD.items():
                if label == "estimator" and i >= max(3, n // 3):
                    continue  # the slowest page: fewer rounds
                writer.write()
                got = request(bench.client, url)
                if got.status != 200 or not got.rendered:
                    raise RuntimeError(f"{url} after a write: HTTP {got.status}")
                found[label]["page"].append(got.seconds)
                found[label]["replay"].append(replay(got.statements))
                found[label]["counts"].append(len(got.statements))
                found[label]["version_reads"] = got.version_reads
                found[label]["sql"] = [sql for sql, _, _ in got.statements]
    finally:
        writer.settle()
    return {
        label: {
            "page_s": median(m["page"]),
            "replay_s": median(m["replay"]),
            "statements": max(m["counts"]),
            "counts": sorted(set(m["counts"])),
            "version_reads": m["version_reads"],
            "sql": m["sql"],
            "n": len(m["page"]),
        }
        for label, m in found.items()
    }


def cold_figures(report: Report, cold: dict[str, dict]) -> None:
    default = cold["default filter page"]
    shapes = ", ".join(
        next(filter(None, found.groups())) if (found := TABLE.search(sql)) else sql[:30]
        for sql in default["sql"]
    )
    report.add(
        f"default filter page /, cold render: SQL statements at {SCALE:,} types",
        f"{default['statements']} (the version read included: {default['version_reads']} of "
        f"them; {default['statements'] - default['version_reads']} without it)",
        f"<= {DEFAULT_STATEMENTS}, the version read included",
        default["statements"] <= DEFAULT_STATEMENTS,
        f"statements reading: {shapes}",
        key="27.6b",
    )
    for label, m in cold.items():
        report.info(
            f"{label} {COLD[label]}, cold render (after a write): server time / its own SQL",
            f"{ms(m['page_s'])} / {ms(m['replay_s'])} ({m['page_s'] / m['replay_s']:.1f}x), "
            f"{m['statements']} statements, median of {m['n']}",
        )


def baseline(quick: bool) -> int:
    """`--baseline`: the cold pages `growth` compares, at this scale (5,000 types), as JSON."""
    setup_django()
    bench = Bench(quick)
    vacuum(bench)
    found = cold_pages(bench, 5 if quick else 15)
    print(
        "BASELINE "
        + json.dumps(
            {
                label: {"page_s": m["page_s"], "statements": m["statements"]}
                for label, m in found.items()
            }
        )
    )
    return 0


def growth(report: Report, cold: dict[str, dict], quick: bool) -> None:
    """This scale against the default one, measured in a process of its own on the 5,000-type
    database within the same run: statement counts unchanged, the cold default page within
    GROWTH_TARGET times its time at 5,000 types."""
    env = dict(os.environ, BENCH_SCALE=str(DEFAULT_SCALE))
    env.pop("BENCH_DATABASE_URL", None)
    args = [PY, "-m", "bench.listing", "--baseline"] + (["--quick"] if quick else [])
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
    line = next((x for x in done.stdout.splitlines() if x.startswith("BASELINE ")), None)
    if line is None:
        report.add(
            f"baseline at {DEFAULT_SCALE:,} types",
            f"failed (exit {done.returncode})",
            "measured",
            False,
            (done.stderr or done.stdout)[-300:],
        )
        return
    base = json.loads(line.removeprefix("BASELINE "))
    for label, measured in cold.items():
        before, now = base[label]["statements"], measured["statements"]
        report.add(
            f"{label}, cold: SQL statements at {SCALE:,} types / at {DEFAULT_SCALE:,}",
            f"{now} / {before}",
            "unchanged",
            now == before,
            COLD[label],
        )
    for label, measured in cold.items():
        ratio = measured["page_s"] / base[label]["page_s"]
        shown = f"{ratio:.2f}x ({ms(measured['page_s'])} vs {ms(base[label]['page_s'])})"
        name = f"{label}, cold: server time at {SCALE:,} types / at {DEFAULT_SCALE:,}"
        if label == "default filter page":
            report.add(name, shown, f"<= {GROWTH_TARGET}x", ratio <= GROWTH_TARGET, key="27.5")
        else:
            report.info(name, shown)
    report.details["baseline"] = base


def main(argv: list[str] | None = None) -> int:
    quick = quick_mode(argv)
    if "--baseline" in (sys.argv[1:] if argv is None else argv):
        return baseline(quick)
    print("== listing at the synthetic catalog's size (in-process)", flush=True)
    setup_django()
    from django.test.utils import override_settings

    from offerings.models import InstanceType, Offer

    report = Report("listing")
    visible = InstanceType.objects.visible().count()
    offers = Offer.objects.current().count()
    if visible < SCALE:
        report.add(
            "visible instance types in the bench database",
            f"{visible:,}",
            f">= {SCALE:,}",
            False,
            "run bench.synthetic first",
        )
        report.save()
        return 1
    report.info("catalog", f"{visible:,} visible instance types, {offers:,} current offers")
    n = 5 if quick else 15
    dummy = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    bench = Bench(quick)
    with override_settings(CACHES=dummy):
        query_counts(bench, report, [500, 5000] + ([SCALE] if SCALE > 5000 else []))
        # The row counts above hid rows and rolled back: their dead row versions would make
        # every statement below slower than it is in a table autovacuum keeps (and flatter the
        # pages' ratios to their SQL), so the tables are vacuumed first.
        vacuum(bench)
        other_pages(bench, report)
        codebase_fetch_modes(report)
        default = page_vs_replay(bench, report, "/", "default filter page", n)
        count_vs_page(bench, report, "default filter page", default, n)
        sql_breakdown(bench, report, "default filter page", default, n)
        priced = page_vs_replay(
            bench, report, PRICE_FILTERED, "price-filtered page", 3 if quick else n // 2
        )
        count_vs_page(bench, report, "price-filtered page", priced, n)
        sql_breakdown(bench, report, "price-filtered page", priced, n)
        # The cluster planner's first page (issue 21): every shape of the matching types.
        page_vs_replay(bench, report, PLAN, "planner API first page", n, 3, key="27.6a")
        # The estimator at catalog scale: every matching type at 4 node counts, first page.
        page_vs_replay(
            bench,
            report,
            ESTIMATE,
            "estimator API first page (4 node counts)",
            3 if quick else 5,
            3,
            key="27.6a",
        )
    # Cold renders through the real response cache, each right after a write.
    cold = cold_pages(bench, n)
    cold_figures(report, cold)
    report.details["cold"] = cold
    if SCALE != DEFAULT_SCALE:
        growth(report, cold, quick)
    if not quick:
        with override_settings(CACHES=dummy):
            profile(bench, "/", "default filter page", report)
    report.save()
    return 0 if all(f.passed is not False for f in report.figures) else 1


if __name__ == "__main__":
    sys.exit(main())
