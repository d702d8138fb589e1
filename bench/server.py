"""Start and stop the gunicorn servers the HTTP benchmarks measure.

gunicorn runs pinned to CPU 0 (`taskset -c 0`) with `--preload`, in the benchmark environment
(bench/common.py), so the load generator can have CPU 1 to itself. The site runs as in
production: its ASGI app (`gpucatalog.asgi`, Django and the MCP server) under uvicorn's worker;
the bare WSGI apps the figures compare it with (no-work, the floor of a hit) under sync workers.
Only the processes started here are ever stopped, by their own process group.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.common import ROOT, VAR, bench_env

GUNICORN = str(ROOT / ".venv" / "bin" / "gunicorn")
ASGI_WORKER = "uvicorn_worker.UvicornWorker"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pinned(cpu: str, command: list[str]) -> list[str]:
    """The command pinned to `cpu` when taskset exists (util-linux)."""
    return ["taskset", "-c", cpu, *command] if shutil.which("taskset") else command


class Gunicorn:
    """`with Gunicorn() as server:` a gunicorn on a free port; `server.url` is its base URL."""

    def __init__(
        self,
        app: str = "gpucatalog.asgi:application",
        *,
        workers: int = 2,
        cpu: str = "0",
        env: dict[str, str] | None = None,
        ready_path: str = "/healthz",
        name: str = "django",
        args: list[str] | None = None,
    ) -> None:
        self.app = app
        self.args = args or []
        self.workers = workers
        self.cpu = cpu
        self.extra_env = env or {}
        self.ready_path = ready_path
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.log = VAR / f"gunicorn-{name}.log"

    def __enter__(self) -> Gunicorn:
        VAR.mkdir(parents=True, exist_ok=True)
        command = pinned(
            self.cpu,
            [
                GUNICORN,
                self.app,
                "--workers",
                str(self.workers),
                "--worker-class",
                ASGI_WORKER if self.app.endswith("asgi:application") else "sync",
                "--preload",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--timeout",
                "120",
                "--graceful-timeout",
                "5",
                "--log-level",
                "warning",
                *self.args,
            ],
        )
        log = self.log.open("w")
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=bench_env() | self.extra_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"gunicorn ({self.name}) exited with {self.process.returncode}; "
                    f"log: {self.log}\n{self.log.read_text()[-2000:]}"
                )
            try:
                with urllib.request.urlopen(self.url + self.ready_path, timeout=30):
                    return self
            except urllib.error.HTTPError:
                return self  # it answers; the status is the caller's business
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"gunicorn ({self.name}) did not answer within 90 s; log: {self.log}")

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)  # our own session: master and workers
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def worker_peak_rss_mib(self) -> list[float]:
        """Peak resident memory (VmHWM) of the master and each worker, from /proc (the master
        first; a worker's high-water mark covers everything it has served)."""
        return self._status_mib("VmHWM:")

    def worker_rss_mib(self) -> list[float]:
        """Resident memory of each worker (and the master), from /proc."""
        return self._status_mib("VmRSS:")

    def _status_mib(self, field: str) -> list[float]:
        if self.process is None:
            return []
        pids = [self.process.pid]
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        if children.exists():
            pids += [int(p) for p in children.read_text().split()]
        sizes = []
        for pid in pids:
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith(field):
                        sizes.append(int(line.split()[1]) / 1024)
            except OSError:
                continue
        return sizes
