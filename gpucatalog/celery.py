"""The Celery app: Redis broker from CELERY_BROKER_URL, tasks discovered in `providers`."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpucatalog.settings")

app = Celery("gpucatalog")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# RedBeat (beat's scheduler, see providers/beat.py) asks whether its settings are present under
# their bare names; under the CELERY_ namespace it reads them but reports them absent, ignoring
# the Redis client options and warning of a fallback that is not taken.
REDBEAT_SETTINGS = ("redbeat_redis_url", "redbeat_redis_options", "redbeat_lock_timeout")


@app.on_after_configure.connect
def name_redbeat_settings(sender: Celery, **kwargs) -> None:
    for name in REDBEAT_SETTINGS:
        sender.conf[name] = sender.conf.first(name)
