"""WSGI entry point: ``gunicorn agentsite.wsgi --threads 32`` (or any WSGI server)."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

application = get_wsgi_application()
