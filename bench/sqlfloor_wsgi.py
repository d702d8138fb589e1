"""The SQL floor: the default page's own SQL, then the saved page's bytes; no Django at all.

gunicorn bench.sqlfloor_wsgi:application, with BENCH_FLOOR_SQL naming a JSON list of the
statements the default page ran (captured in-process, as plain SELECTs), BENCH_NOWORK_FILE the
saved body (read by bench.nowork_wsgi) and DATABASE_URL the benchmark database (bench_env sets
it). Each request runs every statement through one psycopg connection per worker and fetches all
rows, as the page does, then answers the saved bytes: no middleware, no forms, no ORM objects, no
template.

Its throughput is the most any uncached render of that page can reach while it runs that SQL, so
it says whether the "uncached >= 0.05x no-work" target is reachable by making Python faster.
"""

import json
import os

import psycopg

from bench.nowork_wsgi import BODY, HEADERS  # the same saved bytes and headers

with open(os.environ["BENCH_FLOOR_SQL"], encoding="utf-8") as handle:
    STATEMENTS = json.load(handle)
_connection = None  # opened after the fork, one per worker


def application(environ, start_response):
    global _connection
    if _connection is None or _connection.closed:
        _connection = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
    with _connection.cursor() as cursor:
        for sql in STATEMENTS:
            cursor.execute(sql)
            if cursor.description is not None:
                cursor.fetchall()
    start_response("200 OK", HEADERS)
    return [BODY]
