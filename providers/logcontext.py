"""Structured log context for refreshes: provider, refresh-run and task ids on every log line.

`bind(provider="aws", task="…")` sets the context for the current thread or task; the logging
filter adds it to each record as `record.refresh` (" [provider=aws run=42 task=…]", empty outside
a refresh) and as separate `refresh_provider`, `refresh_run_id` and `refresh_task_id` attributes
for JSON formatters. LOGGING in settings installs the filter on the console handler.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager

_CONTEXT: contextvars.ContextVar[dict[str, object] | None] = contextvars.ContextVar(
    "refresh_log_context", default=None
)
FIELDS = ("provider", "run", "task")


@contextmanager
def bind(**values: object) -> Iterator[None]:
    """Add values (provider, run, task) to the log context until the block ends."""
    token = _CONTEXT.set({**current(), **{k: v for k, v in values.items() if v}})
    try:
        yield
    finally:
        _CONTEXT.reset(token)


def current() -> dict[str, object]:
    return dict(_CONTEXT.get() or {})


class RefreshContextFilter(logging.Filter):
    """Attach the refresh context to every record; never drops one."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = current()
        record.refresh_provider = context.get("provider", "")
        record.refresh_run_id = context.get("run", "")
        record.refresh_task_id = context.get("task", "")
        parts = [f"{name}={context[name]}" for name in FIELDS if name in context]
        record.refresh = f" [{' '.join(parts)}]" if parts else ""
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line (LOG_FORMAT=json), the refresh context as its own keys.

    For log collectors gathering several machines' lines: `provider`, `run_id` and `task_id`
    are present on every line of a refresh and absent elsewhere.
    """

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}",
            "level": record.levelname,
            "logger": record.name,
            "process": record.process,
            "message": record.getMessage(),
        }
        for key, attribute in (
            ("provider", "refresh_provider"),
            ("run_id", "refresh_run_id"),
            ("task_id", "refresh_task_id"),
        ):
            if value := getattr(record, attribute, ""):
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)
