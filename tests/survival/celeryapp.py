"""The project's Celery app with test-sized timings, for the worker and beat processes started here.

Everything else (settings, tasks, the beat scheduler and its lock) is the project's own. Set by
environment variables of the process:

- SURVIVAL_BEAT_EVERY_SECONDS, SURVIVAL_BEAT_TASK, SURVIVAL_BEAT_ARGS (a JSON list): replace the
  code-defined schedule (hours between runs) with one entry sent that often.
- SURVIVAL_VISIBILITY_TIMEOUT_SECONDS: the broker's visibility timeout, swept every second, so a
  message whose worker was killed is redelivered within the test rather than after an hour.
"""

from __future__ import annotations

import json
import os

import django

from gpucatalog.celery import app

# Django (and providers/apps.py, which installs the real schedule) first; then the overrides.
django.setup()

if every := os.environ.get("SURVIVAL_BEAT_EVERY_SECONDS"):
    app.conf.beat_schedule = {
        "survival": {
            "task": os.environ["SURVIVAL_BEAT_TASK"],
            "schedule": float(every),
            "args": json.loads(os.environ.get("SURVIVAL_BEAT_ARGS", "[]")),
        }
    }

if visibility := os.environ.get("SURVIVAL_VISIBILITY_TIMEOUT_SECONDS"):
    app.conf.broker_transport_options = {
        "visibility_timeout": int(visibility),
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": 1,
    }
