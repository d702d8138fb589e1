"""Structured log context for refreshes: provider, refresh-run and task ids on every log line.

`bind(provider="aws", task="…")` sets the context for the current thread or task; the logging
filter adds it to each record as `record.refresh` (" [provider=aws run=42 task=…]", empty outside
a refresh) and as separate `refresh_provider`, `refresh_run_id` and `refresh_task_id` attributes
for JSON formatters. LOGGING in settings installs the filter on the console handler.
"""

from __future__ import annotations

import contextvars
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
