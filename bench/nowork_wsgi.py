"""The no-work view: the same bytes as a saved page, with no Django work at all.

gunicorn bench.nowork_wsgi:application, with BENCH_NOWORK_FILE naming the saved body and
BENCH_NOWORK_CONTENT_TYPE its content type. It is the ceiling a cached page is measured against.
"""

import os

with open(os.environ["BENCH_NOWORK_FILE"], "rb") as handle:
    BODY = handle.read()
HEADERS = [
    ("Content-Type", os.environ.get("BENCH_NOWORK_CONTENT_TYPE", "text/html; charset=utf-8")),
    ("Content-Length", str(len(BODY))),
]


def application(environ, start_response):
    start_response("200 OK", HEADERS)
    return [BODY]
