"""Run every benchmark and write bench/RESULTS.md (issue 11).

    .venv/bin/python -m bench.run [--quick] [--skip-synthetic] [--only listing,http_load]
    make bench [ARGS=--quick]

Order: the synthetic catalog (skipped with --skip-synthetic when the bench database already
holds it), then the listing, HTTP, weight and ingest benchmarks one after the other (each timed
benchmark has the machine to itself), while the never-answering provider, which only waits on
sockets, runs alongside them. Each script prints its figures beside their targets and saves
them under var/bench/results/; this collects them into one Markdown table. Exits 1 when a
figure misses its target or a script fails.

The full run takes about 15-20 minutes on 2 cores; --quick (shorter load runs, fewer repeats,
scaled-down timeouts) about 6.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import PY, RESULTS_DIR, ROOT, environment

SCRIPTS = ["synthetic", "listing", "http_load", "weight", "ingest", "never_answers"]
TITLES = {
    "synthetic": "1. Synthetic catalog",
    "listing": "2. Listing at that size (in-process)",
    "ingest": "3. Ingest",
    "http_load": "4. HTTP under load",
    "weight": "5. Page weight and vitals",
    "never_answers": "7. A provider that never answers",
}
SECTION_ORDER = ["synthetic", "listing", "ingest", "http_load", "weight", "never_answers"]
RESULTS_MD = ROOT / "bench" / "RESULTS.md"


def catalog_present() -> bool:
    """Does the bench database already hold the synthetic catalog?"""
    code = (
        "from bench.common import setup_django; setup_django();"
        "from offerings.models import Offer, InstanceType;"
        "import sys; sys.exit(0 if InstanceType.objects.visible().count() >= 5000 "
        "and Offer.objects.current().count() >= 150000 else 1)"
    )
    return subprocess.run([PY, "-c", code], cwd=ROOT, capture_output=True).returncode == 0


def cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def write_markdown(
    results: dict[str, dict], crashed: dict[str, int], quick: bool, elapsed: float
) -> int:
    env = environment()
    lines = [
        "# Benchmark results",
        "",
        f"Written by `bench/run.py{' --quick' if quick else ''}` on "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit `{env['commit']}`, "
        f"{env['cpus']} CPUs ({env['machine']}), Python {env['python']}, "
        f"{elapsed / 60:.1f} minutes in all. Load average at the end: "
        f"{', '.join(map(str, env['load_average_1_5_15']))} (other work on the machine moves "
        "absolute times; ratios are measured within one run). "
        + (
            "**Quick mode**: shorter load runs, fewer repeats, scaled timeouts; use the full "
            "run for the README."
            if quick
            else ""
        ),
        "",
        "| figure | target | measured | result |",
        "|---|---|---|---|",
    ]
    failing = []
    info = []
    for name in SECTION_ORDER:
        if name in crashed:
            lines.append(f"| **{TITLES[name]}** | runs | exited {crashed[name]} | FAIL |")
            failing.append(f"{TITLES[name]}: the script exited {crashed[name]}")
        data = results.get(name)
        if not data:
            continue
        lines.append(f"| **{TITLES[name]}** | | | |")
        for f in data["figures"]:
            if f["passed"] is None:
                info.append((name, f))
                continue
            verdict = "PASS" if f["passed"] else "**FAIL**"
            measured = f["measured"] + (f" ({f['note']})" if f["note"] else "")
            lines.append(
                f"| {cell(f['name'])} | {cell(f['target'])} | {cell(measured)} | {verdict} |"
            )
            if not f["passed"]:
                failing.append(
                    f"{TITLES[name]}: {f['name']}: {f['measured']} (target {f['target']})"
                )
    lines += ["", "## Failing", ""]
    lines += [f"- {cell(item)}" for item in failing] or ["- nothing"]
    lines += [
        "",
        "## Other figures (no target)",
        "",
        "| section | figure | measured |",
        "|---|---|---|",
    ]
    for name, f in info:
        measured = f["measured"] + (f" ({f['note']})" if f["note"] else "")
        lines.append(f"| {TITLES[name]} | {cell(f['name'])} | {cell(measured)} |")
    lines += [
        "",
        "How to run: `make bench` (or `.venv/bin/python -m bench.run [--quick]`); needs "
        "PostgreSQL at 127.0.0.1:5432 (database `gpucatalog_bench`, created if missing), "
        "Redis (DB 9), `wrk`, Node 20 for `npx lighthouse@12`, and Chromium. See "
        "bench/README.md.",
        "",
    ]
    RESULTS_MD.write_text("\n".join(lines))
    return len(failing)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    quick = "--quick" in args
    only = None
    if "--only" in args:
        only = args[args.index("--only") + 1].split(",")
    flags = ["--quick"] if quick else []
    start = time.time()
    keep = {"synthetic.json"} if "--skip-synthetic" in args else set()
    # A skipped generation keeps the figures of the one that made the catalog in the database.
    for path in RESULTS_DIR.glob("*") if RESULTS_DIR.exists() else []:
        if path.name in keep:
            continue
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    crashed: dict[str, int] = {}
    wanted = [s for s in SCRIPTS if only is None or s in only]

    # The bench database exists and follows the tree's migrations before anything runs (the
    # never-answering provider runs alongside others and does not migrate itself).
    from bench.synthetic import ensure_database

    ensure_database(recreate=False)

    def run(name: str) -> None:
        print(f"\n### bench.{name}", flush=True)
        code = subprocess.run([PY, "-u", "-m", f"bench.{name}", *flags], cwd=ROOT).returncode
        if code not in (0, 1):  # 1: a figure missed its target; anything else: a crash
            crashed[name] = code

    if "synthetic" in wanted:
        if "--skip-synthetic" in args and catalog_present():
            print("### bench.synthetic: skipped, the bench database holds the catalog")
        else:
            run("synthetic")
    background = None
    if "never_answers" in wanted and not quick:
        # Four minutes of waiting on a silent socket: alongside the others, not after them.
        print("\n### bench.never_answers (in the background)", flush=True)
        log = RESULTS_DIR.parent / "never_answers.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        background = subprocess.Popen(
            [PY, "-u", "-m", "bench.never_answers", *flags],
            cwd=ROOT,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
    for name in ("listing", "http_load", "weight", "ingest"):
        if name in wanted:
            run(name)
    if background is not None:
        code = background.wait()
        print("\n### bench.never_answers", flush=True)
        print(log.read_text(), flush=True)
        if code not in (0, 1):
            crashed["never_answers"] = code
    elif "never_answers" in wanted:
        run("never_answers")

    results = {}
    for path in RESULTS_DIR.glob("*.json"):
        results[path.stem] = json.loads(path.read_text())
    for name in wanted:
        if name not in results and name not in crashed and name != "synthetic":
            crashed[name] = -1
    elapsed = time.time() - start
    failing = write_markdown(results, crashed, quick, elapsed)
    print(
        f"\nwrote {RESULTS_MD.relative_to(ROOT)}: {failing} failing; {elapsed / 60:.1f} minutes",
        flush=True,
    )
    return 1 if failing else 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
