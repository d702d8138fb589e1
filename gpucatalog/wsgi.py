"""WSGI entry point (gunicorn gpucatalog.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpucatalog.settings")

application = get_wsgi_application()
