"""Run every benchmark and write the generated section of bench/RESULTS.md (issues 11, 27).

    .venv/bin/python -m bench.run [--quick] [--skip-synthetic] [--only listing,http_load]
                                  [--scale=50000]
    make bench [ARGS=--quick]

Order: the synthetic catalog (skipped with --skip-synthetic when the bench database already
holds it), then the listing, cold-render, HTTP, weight and ingest benchmarks one after the other
(each timed benchmark has the machine to itself), while the never-answering provider, which
only waits on sockets, runs alongside them. Each script prints its figures beside their targets
and saves them under var/bench/results/; this collects them into Markdown tables: issue 27's
figures first (both catalog sizes, each with PASS/FAIL or "not measured"), then every figure.
Exits 1 when a figure misses its target or a script fails.

RESULTS.md keeps whatever people write in it: this replaces only the text between its two
marker comments (GENERATED_BEGIN and GENERATED_END), and puts them under the title if a file
has none yet.

The full run takes about 15-25 minutes on 2 cores; --quick (shorter load runs, fewer repeats,
scaled-down timeouts) about 6. `--scale=N` runs the synthetic catalog and the listing only, at N
instance types, in a database and a results folder of their own (bench/common.py), and writes
their section of RESULTS.md after the default run's.
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


def _scale_argument(argv: list[str]) -> str | None:
    """`--scale=N` or `--scale N`: read before bench.common is imported, which reads it."""
    for index, arg in enumerate(argv):
        if arg.startswith("--scale="):
            return arg.partition("=")[2]
        if arg == "--scale" and index + 1 < len(argv):
            return argv[index + 1]
    return None


if (_scale := _scale_argument(sys.argv[1:])) is not None:
    os.environ["BENCH_SCALE"] = str(int(_scale))

from bench.common import (  # noqa: E402
    DEFAULT_SCALE,
    PY,
    RESULTS_DIR,
    RESULTS_ROOT,
    ROOT,
    SCALE,
    environment,
)

SCRIPTS = ["synthetic", "listing", "cold", "http_load", "weight", "ingest", "never_answers"]
TITLES = {
    "synthetic": "1. Synthetic catalog",
    "listing": "2. Listing at that size (in-process)",
    "cold": "2b. Cold renders of never-seen filter URLs (in-process)",
    "ingest": "3. Ingest",
    "http_load": "4. HTTP under load",
    "weight": "5. Page weight and vitals",
    "never_answers": "7. A provider that never answers",
}
SECTION_ORDER = ["synthetic", "listing", "cold", "ingest", "http_load", "weight", "never_answers"]
RESULTS_MD = ROOT / "bench" / "RESULTS.md"
GENERATED_BEGIN = (
    "<!-- bench/run.py: generated results begin. Everything between these two markers is "
    "rewritten by each run; everything outside them is kept. -->"
)
GENERATED_END = "<!-- bench/run.py: generated results end -->"
# Issue 27's figures, in its order: (key, what, at which size). Figures a run did not measure
# are listed as such, so a missing one cannot pass unseen.
ISSUE_27 = [
    ("27.1a", "cold filter URLs: median (beyond its SQL / yardstick), page and API", DEFAULT_SCALE),
    ("27.1b", "cold filter URLs: p95 (beyond its SQL / yardstick), page and API", DEFAULT_SCALE),
    ("27.2", "cached throughput / no-work", DEFAULT_SCALE),
    ("27.3", "a 304 / a full render", DEFAULT_SCALE),
    ("27.4", "peak memory per worker, every scenario", DEFAULT_SCALE),
    ("27.5", "cold default page at 50,000 types / at 5,000", 50_000),
    ("27.6a", "estimator's and planner's first page / their SQL", DEFAULT_SCALE),
    ("27.6b", "default page's statements (cold render)", DEFAULT_SCALE),
    ("27.6b", "default page's statements (cold render)", 50_000),
]


def catalog_present() -> bool:
    """Does the bench database already hold the synthetic catalog (of this scale)?"""
    code = (
        "from bench.common import setup_django; setup_django();"
        "from offerings.models import Offer, InstanceType;"
        "import sys; sys.exit(0 if InstanceType.objects.visible().count() >= "
        f"{SCALE} and Offer.objects.current().count() >= {30 * SCALE} else 1)"
    )
    return subprocess.run([PY, "-c", code], cwd=ROOT, capture_output=True).returncode == 0


def cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def load(directory: Path) -> tuple[dict[str, dict], dict]:
    """The saved figures of each script in a results folder, and its run's record."""
    results = {}
    for path in directory.glob("*.json") if directory.exists() else []:
        if path.stem != "run":
            results[path.stem] = json.loads(path.read_text())
    record = directory / "run.json"
    return results, json.loads(record.read_text()) if record.exists() else {}


def commit_text(commit: str) -> str:
    """`abc1234`, and "with uncommitted changes" when the tree was dirty."""
    if commit.endswith("+dirty"):
        return f"`{commit.removesuffix('+dirty')}` with uncommitted changes"
    return f"`{commit}`"


def script_commits(results: dict[str, dict], run_commit: str) -> str:
    """Which scripts measured another commit than the run's record (taken at its end)."""
    by_commit: dict[tuple[str, str], list[str]] = {}
    for name in SECTION_ORDER:
        data = results.get(name)
        if not data:
            continue
        end = data.get("environment", {}).get("commit", run_commit)
        start = data.get("started_commit", end)
        by_commit.setdefault((start, end), []).append(TITLES[name].split(" ", 1)[0].rstrip("."))
    if set(by_commit) <= {(run_commit, run_commit)}:
        return ""

    def shown(start: str, end: str) -> str:
        dirty = "+dirty" in start + end
        names = [f"`{c.removesuffix('+dirty')}`" for c in dict.fromkeys([start, end])]
        return " -> ".join(names) + (" with uncommitted changes" if dirty else "")

    return "; ".join(
        f"items {', '.join(names)} at {shown(*commits)}" for commits, names in by_commit.items()
    )


def section(results: dict[str, dict], record: dict) -> tuple[list[str], list[str], list]:
    """One run's table: its lines, its failing figures and its figures with no target."""
    env = record.get("environment") or environment()
    crashed = record.get("crashed", {})
    quick = record.get("quick", False)
    scale = record.get("scale", DEFAULT_SCALE)
    flags = (" --quick" if quick else "") + ("" if scale == DEFAULT_SCALE else f" --scale={scale}")
    written = record.get("written") or f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    lines = [
        f"Written by `bench/run.py{flags}` on {written}, commit {commit_text(env['commit'])}, "
        f"{env['cpus']} CPUs ({env['machine']}), Python {env['python']}, "
        f"{record.get('elapsed_s', 0) / 60:.1f} minutes in all. Load average at the end: "
        f"{', '.join(map(str, env['load_average_1_5_15']))} (other work on the machine moves "
        "absolute times; ratios are measured within one run). "
        + (
            "**Quick mode**: shorter load runs, fewer repeats, scaled timeouts; only a full "
            "run's figures count."
            if quick
            else ""
        ),
        "",
        "| figure | target | measured | result |",
        "|---|---|---|---|",
    ]
    moved = script_commits(results, env["commit"])
    if moved:
        lines[0] += f"The tree moved during the run: {moved}."
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
    return lines, failing, info


def info_table(info: list) -> list[str]:
    lines = ["| section | figure | measured |", "|---|---|---|"]
    for name, f in info:
        measured = f["measured"] + (f" ({f['note']})" if f["note"] else "")
        lines.append(f"| {TITLES[name]} | {cell(f['name'])} | {cell(measured)} |")
    return lines


def issue_table(runs: dict[int, tuple[dict, dict]]) -> tuple[list[str], int]:
    """Issue 27's figures from every saved run (the default size and each other one): the
    table's lines and how many of them fail or were not measured."""
    lines = ["| figure | at | target | measured | result |", "|---|---|---|---|---|"]
    missing = 0
    for key, what, scale in ISSUE_27:
        results, record = runs.get(scale, ({}, {}))
        found = [
            f for data in results.values() for f in data.get("figures", []) if f.get("key") == key
        ]
        where = f"{scale:,} types"
        if record.get("quick"):
            where += " (quick)"
        if not found:
            missing += 1
            how = "" if scale == DEFAULT_SCALE else f" (`make bench ARGS=--scale={scale}`)"
            lines.append(f"| {cell(what)} | {where} | | not measured{how} | **not measured** |")
            continue
        for f in found:
            verdict = "PASS" if f["passed"] else "**FAIL**"
            missing += 0 if f["passed"] else 1
            lines.append(
                f"| {cell(f['name'])} | {where} | {cell(f['target'])} | "
                f"{cell(f['measured'])} | {verdict} |"
            )
    return lines, missing


def generated_section() -> tuple[str, dict[int, int]]:
    """The generated Markdown from every saved run, and the failing figures of each size."""
    runs = {DEFAULT_SCALE: load(RESULTS_ROOT / "results")}
    others = sorted(RESULTS_ROOT.glob("results-*"), key=lambda p: int(p.name.split("-")[1]))
    for directory in others:
        runs[int(directory.name.split("-")[1])] = load(directory)
    summary, not_met = issue_table(runs)
    results, record = runs[DEFAULT_SCALE]
    lines, failing, info = section(results, record)
    out = [
        "## Latest run",
        "",
        "### Issue 27's figures",
        "",
        "Collected from the runs below (the default size and `--scale=50000`); each figure's own "
        "row, with its notes, is in the tables that follow.",
        "",
        *summary,
        "",
        f"{not_met} of issue 27's rows fail or were not measured.",
        "",
        f"### Every figure at {DEFAULT_SCALE:,} instance types",
        "",
        *lines,
        "",
        "### Failing",
        "",
    ]
    out += [f"- {cell(item)}" for item in failing] or ["- nothing"]
    out += ["", "### Other figures (no target)", "", *info_table(info)]
    counts = {DEFAULT_SCALE: len(failing)}
    for scale, (results, record) in runs.items():
        if scale == DEFAULT_SCALE:
            continue
        lines, failing, info = section(results, record)
        counts[scale] = len(failing)
        out += ["", f"## At {scale:,} instance types", "", *lines, "", f"### Failing at {scale:,}"]
        out += [""] + ([f"- {cell(item)}" for item in failing] or ["- nothing"])
        if info:
            out += ["", f"### Other figures at {scale:,} (no target)", "", *info_table(info)]
    out += [
        "",
        "How to run: `make bench` (or `.venv/bin/python -m bench.run [--quick]`); needs "
        "PostgreSQL at 127.0.0.1:5432 (database `gpucatalog_bench`, created if missing), "
        "Redis (DB 9), `wrk`, Node 20 for `npx lighthouse@12`, and Chromium. "
        "`make bench ARGS=--scale=50000` measures the listing and the estimator at 50,000 types "
        "(database `gpucatalog_bench_50000`) and writes its own section. See bench/README.md.",
    ]
    return "\n".join(out), counts


def replace_generated(text: str, generated: str) -> str:
    """`text` with the part between the markers replaced by `generated`; a text without the
    markers gets them (and `generated`) under its title, the rest kept as it was."""
    block = f"{GENERATED_BEGIN}\n\n{generated}\n\n{GENERATED_END}"
    begin = text.find(GENERATED_BEGIN)
    end = text.find(GENERATED_END, begin + 1) if begin >= 0 else -1
    if begin >= 0 and end >= 0:
        return text[:begin] + block + text[end + len(GENERATED_END) :]
    lines = text.splitlines(keepends=True)
    title = next((i + 1 for i, line in enumerate(lines) if line.startswith("# ")), None)
    if title is None:
        return "# Benchmark results\n\n" + block + "\n" + ("\n" + text if text else "")
    rest = "".join(lines[title:]).lstrip("\n")
    return "".join(lines[:title]) + "\n" + block + "\n" + ("\n" + rest if rest else "")


def write_markdown() -> int:
    """The generated section of bench/RESULTS.md from every saved run. Returns the number of
    failing figures of this scale."""
    generated, counts = generated_section()
    current = RESULTS_MD.read_text() if RESULTS_MD.exists() else ""
    RESULTS_MD.write_text(replace_generated(current, generated))
    return counts.get(SCALE, 0)


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
    scripts = SCRIPTS if SCALE == DEFAULT_SCALE else ["synthetic", "listing"]
    wanted = [s for s in scripts if only is None or s in only]

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
    for name in ("listing", "cold", "http_load", "weight", "ingest"):
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

    saved = load(RESULTS_DIR)[0]
    for name in wanted:
        if name not in saved and name not in crashed and name != "synthetic":
            crashed[name] = -1
    elapsed = time.time() - start
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "run.json").write_text(
        json.dumps(
            {
                "written": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
                "environment": environment(),
                "elapsed_s": round(elapsed, 1),
                "quick": quick,
                "scale": SCALE,
                "crashed": crashed,
            },
            indent=2,
        )
    )
    failing = write_markdown()
    print(
        f"\nwrote {RESULTS_MD.relative_to(ROOT)}: {failing} failing; {elapsed / 60:.1f} minutes",
        flush=True,
    )
    return 1 if failing else 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
