"""A provider that never answers: a failed run, nothing written, within the timeout chain (item 7).

    .venv/bin/python -m bench.never_answers [--quick] [--provider azure]

A local TCP server (127.0.0.1, a free port) accepts every connection and never sends a byte
(at most 64 connections held, all closed at the end). The provider's scraper runs through
`providers.refresh.refresh_provider` exactly as `refresh_prices` and the Celery task run it,
with the client from `providers.http.make_client` (the configured timeouts, attempts, backoff
and real sleeps); only the transport underneath is pointed at the silent server, whatever host
the scraper asks for. Printed: the elapsed time against the configured chain for a silent server
(attempts x (connect + read timeout) + the longest backoff waits), against the code's own worst
case (`providers.schedule.worst_http_request_seconds`) and the task's soft time limit; the run's
status and error; and that no offer, price-history row or review-queue row of the provider
changed.

`--quick` scales the per-attempt timeouts down to 2 s (attempts and backoff unchanged), so the
run takes seconds instead of four minutes; the figure says so.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Report, quick_mode, setup_django


class SilentServer:
    """Accepts TCP connections and never answers; bounded in connections and lifetime."""

    def __init__(self, max_connections: int = 64, lifetime_s: float = 1800) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.max_connections = max_connections
        self.deadline = time.monotonic() + lifetime_s
        self.held: list[socket.socket] = []
        self.accepted = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self.stopping.is_set() and time.monotonic() < self.deadline:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            if len(self.held) >= self.max_connections:
                conn.close()
            else:
                self.held.append(conn)  # never read, never written

    def __enter__(self) -> SilentServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
        for conn in self.held:
            conn.close()
        self.sock.close()


def to_silent_server(port: int):
    """A transport that sends every request, whatever its host, to the silent server."""
    import httpx

    from providers.http import live_transport

    class ToSilent(httpx.BaseTransport):
        def __init__(self) -> None:
            self.inner = live_transport()
            self.requests: list[str] = []

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            self.requests.append(str(request.url))
            request.url = request.url.copy_with(scheme="http", host="127.0.0.1", port=port)
            return self.inner.handle_request(request)

        def close(self) -> None:
            self.inner.close()

    return ToSilent()


def provider_state(slug: str) -> dict:
    """What a failed run must leave exactly as it was."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT count(*), coalesce(sum(o.price_per_hour), 0),
                   md5(coalesce(string_agg(o.id || ':' || o.price_per_hour || ':' ||
                       o.observed_at || ':' || o.last_seen_at || ':' || o.is_active || ':' ||
                       o.missing_runs, ',' ORDER BY o.id), ''))
            FROM offerings_offer o
            JOIN offerings_instancetype i ON i.id = o.instance_id
            JOIN offerings_provider p ON p.id = i.provider_id
            WHERE p.slug = %s
            """,
            [slug],
        )
        offers = cursor.fetchone()
        cursor.execute(
            """
            SELECT count(*) FROM offerings_priceobservation h
            JOIN offerings_offer o ON o.id = h.offer_id
            JOIN offerings_instancetype i ON i.id = o.instance_id
            JOIN offerings_provider p ON p.id = i.provider_id WHERE p.slug = %s
            """,
            [slug],
        )
        history = cursor.fetchone()[0]
        cursor.execute(
            "SELECT count(*), coalesce(max(r.last_seen_at)::text, '') FROM offerings_skureview r "
            "JOIN offerings_provider p ON p.id = r.provider_id WHERE p.slug = %s",
            [slug],
        )
        review = cursor.fetchone()
    return {"offers": offers, "history": history, "review": review}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    quick = quick_mode(args)
    slug = args[args.index("--provider") + 1] if "--provider" in args else "azure"
    print(f"== a provider that never answers ({slug})", flush=True)
    setup_django(migrate=False)
    import httpx
    from django.conf import settings

    from offerings.models import ScrapeRun
    from providers import http
    from providers.refresh import refresh_provider

    report = Report("never_answers")
    timeout = http.TIMEOUT
    if quick:
        timeout = httpx.Timeout(connect=2.0, read=2.0, write=2.0, pool=2.0)
    attempts = http.MAX_ATTEMPTS
    waits = sum(
        min(http.BACKOFF_CAP_S, http.BACKOFF_BASE_S * 2 ** (a - 1)) for a in range(1, attempts)
    )
    # A silent server accepts the connection and never sends: each attempt waits out the read
    # timeout (the connect succeeds at once); between attempts, full-jitter backoff.
    expected = attempts * (timeout.read or 0) + waits
    bound = attempts * ((timeout.connect or 0) + (timeout.read or 0)) + waits + 5
    try:
        from providers.schedule import worst_http_request_seconds

        worst = worst_http_request_seconds()
    except ImportError:
        worst = None
    soft = getattr(settings, "REFRESH_SOFT_TIME_LIMIT_SECONDS", None)

    before = provider_state(slug)
    runs_before = ScrapeRun.objects.filter(provider__slug=slug).count()
    with SilentServer() as server:
        transport = to_silent_server(server.port)
        client = http.make_client(transport, timeout=timeout)
        start = time.monotonic()
        with client:
            run = refresh_provider(slug, client, trigger="bench")
        elapsed = time.monotonic() - start
        accepted = server.accepted
    after = provider_state(slug)
    runs = ScrapeRun.objects.filter(provider__slug=slug).count() - runs_before

    scaled = " (per-attempt timeouts scaled to 2 s by --quick)" if quick else ""
    report.add(
        "refresh of a provider that never answers: elapsed / configured chain",
        f"{elapsed:.1f} s (chain at most {expected:.1f} s){scaled}",
        f"<= {bound:.0f} s ({attempts} attempts x {timeout.read:g} s read timeout + backoff "
        f"waits <= {waits:g} s)",
        elapsed <= bound,
        f"{accepted} connection(s) accepted, {len(transport.requests)} request(s) sent",
    )
    if worst is not None and not quick:
        report.add(
            "  ... within the code's worst case for one request (providers.schedule)",
            f"{elapsed:.1f} s of {worst:g} s",
            f"< {worst:g} s",
            elapsed < worst,
        )
    if soft and not quick:
        report.add(
            "  ... within the refresh task's soft time limit",
            f"{elapsed:.1f} s of {soft} s",
            f"< {soft} s",
            elapsed < soft,
        )
    report.add(
        "the run ends failed, with the reason",
        f"{run.status}: {'; '.join(run.error_messages)[:150]}",
        "failed",
        run.status == ScrapeRun.Status.FAILED,
        f"{runs} run record(s) written",
    )
    unchanged = before == after
    report.add(
        "offers, price history and review queue of the provider unchanged",
        "unchanged" if unchanged else f"changed: {before} -> {after}",
        "unchanged",
        unchanged,
        f"{before['offers'][0]} offers, {before['history']} history rows",
    )
    report.details = {
        "elapsed_s": elapsed,
        "expected_s": expected,
        "bound_s": bound,
        "worst_http_request_s": worst,
        "soft_limit_s": soft,
        "quick": quick,
    }
    report.save()
    return 0 if all(f.passed is not False for f in report.figures) else 1


if __name__ == "__main__":
    sys.exit(main())
