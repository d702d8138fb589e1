"""WSGI entry point (gunicorn gpucatalog.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpucatalog.settings")

application = get_wsgi_application()

# Imported after Django is set up: repeated page GETs answered from this process's memory.
from offerings.caching import LocalPageCache  # noqa: E402

application = LocalPageCache(application)
