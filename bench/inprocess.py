"""In-process measuring shared by bench.listing and bench.cold (issue 27).

A request's own SQL is recorded with `connection.execute_wrapper` (the statement and its
parameters, as the ORM sent them, at the cost of one list append) and replayed through the
psycopg connection's own cursor, with the same parameters, every row fetched. A cold render is
a request answered right after a real write, so the data version it reads is new and the
response cache holds nothing under it.

Only offerings.models and the site's URLs are used: modules inside offerings/ may move.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from decimal import Decimal

# The statement a cache hit sends: the data version's counter and the moment of its write.
VERSION_SQL = "SELECT counter, changed_at FROM offerings_catalogversion WHERE id = 1"


@dataclass
class Recorded:
    """One request: its response, its server time and the statements it sent."""

    response: object
    seconds: float
    statements: list[tuple[str, object, bool]] = field(default_factory=list)

    @property
    def status(self) -> int:
        return self.response.status_code

    @property
    def version_reads(self) -> int:
        return sum(1 for sql, _, _ in self.statements if sql.strip() == VERSION_SQL)

    @property
    def rendered(self) -> bool:
        """Did the view run (a cache hit sends the version read and nothing else)?"""
        return len(self.statements) > self.version_reads


class Recorder:
    """`with connection.execute_wrapper(recorder):` keeps (sql, params, many) of each statement."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, object, bool]] = []

    def __call__(self, execute, sql, params, many, context):
        self.statements.append((sql, params, many))
        return execute(sql, params, many, context)


def request(client, url: str, headers: dict | None = None) -> Recorded:
    """GET `url` through the test client, timed, with its statements recorded."""
    from django.db import connection

    recorder = Recorder()
    with connection.execute_wrapper(recorder):
        start = time.perf_counter()
        response = client.get(url, headers=headers or None)
        elapsed = time.perf_counter() - start
    return Recorded(response, elapsed, recorder.statements)


def replay(statements: list[tuple[str, object, bool]]) -> float:
    """Send the statements again through the psycopg connection's own cursor (no Django in
    between), fetching every row; the seconds it took. Only reads are replayed."""
    from django.db import connection

    connection.ensure_connection()
    start = time.perf_counter()
    with connection.connection.cursor() as cursor:
        for sql, params, many in statements:
            if many or not sql.lstrip().upper().startswith(("SELECT", "WITH")):
                continue
            cursor.execute(sql, params)
            if cursor.description is not None:
                cursor.fetchall()
    return time.perf_counter() - start


def replay_median(statements: list[tuple[str, object, bool]], n: int) -> float:
    return statistics.median(replay(statements) for _ in range(max(1, n)))


def catalog_version() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(VERSION_SQL)
        row = cursor.fetchone()
    return row[0] if row else 0


class Writer:
    """Real writes that move the data version: one current offer's price goes up by a
    millionth of a unit per hour, and back down on the next write (`settle` restores it)."""

    STEP = Decimal("0.000001")

    def __init__(self) -> None:
        from offerings.models import Offer

        self.offer_id = Offer.objects.current().order_by("pk").values_list("pk", flat=True)[0]
        self.raised = False
        self.writes = 0

    def write(self) -> tuple[int, int]:
        """One UPDATE of the offer's price, committed; (version before, version after)."""
        from django.db import connection

        before = catalog_version()
        step = -self.STEP if self.raised else self.STEP
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE offerings_offer SET price_per_hour = price_per_hour + %s WHERE id = %s",
                [step, self.offer_id],
            )
        self.raised = not self.raised
        self.writes += 1
        after = catalog_version()
        if after == before:
            raise RuntimeError("a write to offerings_offer did not move the data version")
        return before, after

    def settle(self) -> None:
        if self.raised:
            self.write()


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile (share 0.95 for p95)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * share // 1))  # ceil
    return ordered[int(rank) - 1]
