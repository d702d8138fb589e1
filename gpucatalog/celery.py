"""The Celery app: Redis broker from CELERY_BROKER_URL, tasks discovered in `providers`."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpucatalog.settings")

app = Celery("gpucatalog")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
