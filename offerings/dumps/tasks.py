"""The daily data dump, as a Celery task beat schedules (providers/schedule.py)."""

from __future__ import annotations

import logging

from celery import shared_task

from offerings.dumps import snapshot

PUBLISH_DUMP_TASK = "offerings.dumps.tasks.publish_dump"

logger = logging.getLogger(__name__)


@shared_task(name=PUBLISH_DUMP_TASK, acks_late=True, soft_time_limit=1500, time_limit=1560)
def publish_dump() -> str:
    """Write the current data version's snapshot unless it exists, and prune old ones."""
    published, written = snapshot.publish()
    state = "written" if written else "already there"
    logger.info("data dump %s: %s", published.name, state)
    return f"{published.name}: {state}"
