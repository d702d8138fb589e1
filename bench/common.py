"""What every benchmark shares: the benchmark environment, figures with targets, and timing.

The benchmarks never read the caller's DATABASE_URL, REDIS_URL or CELERY_BROKER_URL: they run
against their own database (BENCH_DATABASE_URL, default `gpucatalog_bench` on 127.0.0.1:5432, or
`gpucatalog_bench_50000` for BENCH_SCALE=50000)
and their own Redis database (BENCH_REDIS_URL, default DB 9), so they never touch anyone else's
data. The environment is the same whatever DJANGO_ENV says: DEBUG off, rate limits off
(as docs/interface.md says of the benchmark settings), no SSL redirect, local host names allowed.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
VAR = ROOT / "var" / "bench"
PY = str(ROOT / ".venv" / "bin" / "python")

# The synthetic catalog's size in instance types. The default run measures 5,000; `--scale=N`
# (bench/run.py, which exports BENCH_SCALE) another size, in a database and a results folder of
# its own, so the two catalogs and their figures live side by side (issue 22, item 4).
DEFAULT_SCALE = 5000
SCALE = int(os.environ.get("BENCH_SCALE") or DEFAULT_SCALE)
SUFFIX = "" if SCALE == DEFAULT_SCALE else f"_{SCALE}"
RESULTS_ROOT = VAR
RESULTS_DIR = VAR / ("results" if SCALE == DEFAULT_SCALE else f"results-{SCALE}")

BENCH_DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL", f"postgres://postgres@127.0.0.1:5432/gpucatalog_bench{SUFFIX}"
)
# "none" runs without Redis (local-memory cache, one per process).
BENCH_REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9")
BENCH_SECRET_KEY = "bench-only-secret-key-" + "x7Qp2Lm9Zr4Tb8Wc1Yd6" * 2


def bench_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The process environment every benchmark (and the server it starts) runs with."""
    env = dict(os.environ if base is None else base)
    # The settings' own defaults (development), not whatever the shell exported (a DJANGO_ENV=test
    # left over from CI would turn the page cache off); BENCH_DJANGO_ENV=production to compare.
    env["DJANGO_ENV"] = os.environ.get("BENCH_DJANGO_ENV", "development")
    env["DATABASE_URL"] = BENCH_DATABASE_URL
    env["DEBUG"] = "false"
    env["RATELIMIT_ENABLE"] = "false"
    env["SECURE_SSL_REDIRECT"] = "false"
    env["ALLOWED_HOSTS"] = "127.0.0.1,localhost,testserver"
    env["STATIC_ROOT"] = str(VAR / "staticfiles")
    env["LOG_LEVEL"] = "WARNING"
    env.setdefault("SECRET_KEY", BENCH_SECRET_KEY)
    env.setdefault("DJANGO_SETTINGS_MODULE", "gpucatalog.settings")
    env.pop("CELERY_BROKER_URL", None)
    if BENCH_REDIS_URL.lower() in ("", "none"):
        env.pop("REDIS_URL", None)
    else:
        env["REDIS_URL"] = BENCH_REDIS_URL
    return env


def check_bench_database() -> str:
    """Refuse any database whose name does not say it is for benchmarks: we truncate it."""
    name = urlsplit(BENCH_DATABASE_URL).path.lstrip("/")
    if "bench" not in name and os.environ.get("BENCH_ALLOW_ANY_DB") != "1":
        sys.exit(
            f"refusing to benchmark against database {name!r}: its name must contain 'bench' "
            "(set BENCH_DATABASE_URL, or BENCH_ALLOW_ANY_DB=1 if you really mean it)"
        )
    return name


def setup_django(migrate: bool = True) -> None:
    """Configure this process with the benchmark environment and start Django.

    The benchmark database is migrated first: the tree being measured may have gained a
    migration since the synthetic catalog was generated.
    """
    check_bench_database()
    os.environ.clear()
    os.environ.update(bench_env(dict(_ORIGINAL_ENV)))
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)


_ORIGINAL_ENV = dict(os.environ)


def quick_mode(argv: list[str] | None = None) -> bool:
    argv = sys.argv[1:] if argv is None else argv
    return "--quick" in argv or os.environ.get("BENCH_QUICK") == "1"


# -- figures -------------------------------------------------------------------------------------


@dataclass
class Figure:
    """One measured figure beside its target."""

    name: str
    measured: str
    target: str
    passed: bool | None  # None: informational, no target
    note: str = ""
    # An issue's figure ("27.1a"): bench/run.py lists these first, in a summary of their own.
    key: str = ""

    @property
    def verdict(self) -> str:
        return {True: "PASS", False: "FAIL", None: "info"}[self.passed]


@dataclass
class Report:
    """The figures of one benchmark script, printed as they come and saved for run.py."""

    script: str
    figures: list[Figure] = field(default_factory=list)
    details: dict = field(default_factory=dict)
    started: float = field(default_factory=time.time)
    # The tree can move while a long run goes on: the commit when the script started, and (in
    # `environment`) when it saved; bench/run.py shows both when they differ from the run's.
    started_commit: str = field(default_factory=lambda: environment()["commit"])

    def add(
        self,
        name: str,
        measured: str,
        target: str,
        passed: bool | None,
        note: str = "",
        key: str = "",
    ) -> Figure:
        figure = Figure(name, measured, target, passed, note, key)
        self.figures.append(figure)
        tail = f"  ({note})" if note else ""
        print(f"  [{figure.verdict:>4}] {name}: {measured}  target {target}{tail}", flush=True)
        return figure

    def info(self, name: str, measured: str, note: str = "") -> Figure:
        return self.add(name, measured, "-", None, note)

    def save(self) -> Path:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        path = RESULTS_DIR / f"{self.script}.json"
        data = {
            "script": self.script,
            "elapsed_s": round(time.time() - self.started, 1),
            "figures": [asdict(f) for f in self.figures],
            "details": self.details,
            "environment": environment(),
            "started_commit": self.started_commit,
        }
        path.write_text(json.dumps(data, indent=2, default=str))
        failed = [f for f in self.figures if f.passed is False]
        print(
            f"{self.script}: {len(self.figures)} figure(s), {len(failed)} failing, "
            f"{data['elapsed_s']} s; saved {path.relative_to(ROOT)}",
            flush=True,
        )
        return path


def environment() -> dict:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {
        "commit": commit + ("+dirty" if dirty else ""),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        # Other work on the machine skews absolute figures; ratios measured together less so.
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
    }


# -- timing --------------------------------------------------------------------------------------


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def spread(values: list[float]) -> str:
    """min-max as a percentage of the median, the way the tables show run-to-run noise."""
    if len(values) < 2:
        return "1 run"
    mid = median(values)
    return f"±{(max(values) - min(values)) / 2 / mid * 100:.1f}%" if mid else "n/a"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def kb(n_bytes: float) -> str:
    return f"{n_bytes / 1024:.1f} KB"
