"""The Celery app: ``celery -A approvals worker --pool threads --concurrency 8``.

Its settings are Django's ``CELERY_*`` ones (agentsite/settings.py): Redis as the broker,
tasks acknowledged once done. A thread pool suits these tasks: each waits on the network
while a session finishes (the library runs the tools on threads of its own), and one
provider and one connection pool serve every task of the worker.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

app = Celery("approvals", include=["approvals.tasks"])
app.config_from_object("django.conf:settings", namespace="CELERY")
