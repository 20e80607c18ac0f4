"""Settings of the example site: everything comes from the environment.

No database, no sessions, no templates: the site only runs agents and answers in JSON or
server-sent events, and lists the decisions runs left for a person (kept in Redis).
"""

from __future__ import annotations

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

# Development defaults; set DJANGO_SECRET_KEY, DJANGO_DEBUG=0 and DJANGO_ALLOWED_HOSTS to deploy.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "insecure-example-key-change-me")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = [h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "").split(",") if h]

INSTALLED_APPS = ["chat.apps.ChatConfig", "approvals.apps.ApprovalsConfig"]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
]
ROOT_URLCONF = "agentsite.urls"
WSGI_APPLICATION = "agentsite.wsgi.application"
ASGI_APPLICATION = "agentsite.asgi.application"
DATABASES: dict[str, dict[str, str]] = {}
USE_TZ = True

# --- the agent -------------------------------------------------------------------------
# Empty values fall through to the library's own lookup (ANTHROPIC_API_KEY, then an error;
# ANTHROPIC_BASE_URL, then the public API), so the provider sees exactly what is set here.
ANTHROPIC_API_KEY = os.environ.get("ANTHROPIC_API_KEY", "")
ANTHROPIC_BASE_URL = os.environ.get("ANTHROPIC_BASE_URL", "")
CLAUDE_AGENT_ID = os.environ.get("CLAUDE_AGENT_ID", "")
CLAUDE_ENVIRONMENT_ID = os.environ.get("CLAUDE_ENVIRONMENT_ID", "")
# Seconds one run may take before the view gives up (and stops the remote turn).
AGENT_RUN_TIMEOUT = float(os.environ.get("AGENT_RUN_TIMEOUT", "300"))
# Connections per host in the provider's pool; 0 keeps the library's default (see README).
AGENT_HTTP_POOL_MAXSIZE = int(os.environ.get("AGENT_HTTP_POOL_MAXSIZE", "0"))
# Threads the async views may block at once, one per run in flight (ASGI only).
AGENT_MAX_ASYNC_RUNS = int(os.environ.get("AGENT_MAX_ASYNC_RUNS", "64"))

# --- approvals (the approvals app; needs celery and redis) -------------------------------
# One Redis for the decisions store, the Celery broker and each click's progress.
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
# The agent `manage.py start_run` starts: its provider tools ask for permission.
CLAUDE_APPROVALS_AGENT_ID = os.environ.get("CLAUDE_APPROVALS_AGENT_ID", "")
CELERY_BROKER_URL = REDIS_URL
# A click's outcome goes to Redis for the page (approvals/progress.py), not to a backend.
CELERY_TASK_IGNORE_RESULT = True
# Acknowledge a task once it is done, so one whose worker dies is delivered again (the same
# answer again takes over where the dead worker stopped); no task waits behind another.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Longer than a delivery can take (a retry's backoff and a whole run), or a task still
# running would be handed to a second worker.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 60 + 2 * AGENT_RUN_TIMEOUT}

# Show the library's warnings and urllib3's "Connection pool is full" (a pool too small for
# the traffic) instead of letting them vanish: urllib3 gives its logger a NullHandler.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        "req_managed_agents": {"handlers": ["console"], "level": "WARNING"},
        "urllib3": {"handlers": ["console"], "level": "WARNING"},
        "chat": {"handlers": ["console"], "level": "INFO"},
        "approvals": {"handlers": ["console"], "level": "INFO"},
    },
}
