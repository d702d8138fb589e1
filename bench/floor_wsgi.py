"""The floor of a cached page: what every cache hit must do, with no Django at all.

gunicorn bench.floor_wsgi:application, with BENCH_NOWORK_FILE naming the saved body,
BENCH_FLOOR_DATABASE_URL the bench database and BENCH_FLOOR_REDIS_URL the Redis it keeps the body
in. Each request reads the data version from PostgreSQL (the response cache's key holds it, and a
response may never be older than the version committed before its request began) and GETs the
body from Redis, then sends it. A cached page cannot be faster than this; the no-work view
(bench/nowork_wsgi.py) skips both round trips.
"""

import os

import psycopg
import redis

with open(os.environ["BENCH_NOWORK_FILE"], "rb") as handle:
    BODY = handle.read()
KEY = "bench:floor:body"
CONTENT_TYPE = os.environ.get("BENCH_NOWORK_CONTENT_TYPE", "text/html; charset=utf-8")
_connections: dict[str, object] = {}  # opened in each worker after the fork, on first use


def application(environ, start_response):
    if not _connections:
        _connections["pg"] = psycopg.connect(
            os.environ["BENCH_FLOOR_DATABASE_URL"], autocommit=True
        )
        _connections["redis"] = redis.Redis.from_url(os.environ["BENCH_FLOOR_REDIS_URL"])
        _connections["redis"].set(KEY, BODY)
    with _connections["pg"].cursor() as cursor:
        # The statement the site's hits send (offerings.web.caching.VERSION_SQL).
        cursor.execute("SELECT counter, changed_at FROM offerings_catalogversion WHERE id = 1")
        cursor.fetchone()
    body = _connections["redis"].get(KEY)
    start_response("200 OK", [("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body)))])
    return [body]
