"""Settings of the example site: everything comes from the environment.

No database, no sessions, no templates: the site only runs agents and answers in JSON or
server-sent events.
"""

from __future__ import annotations

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

# Development defaults; set DJANGO_SECRET_KEY, DJANGO_DEBUG=0 and DJANGO_ALLOWED_HOSTS to deploy.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "insecure-example-key-change-me")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = [h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "").split(",") if h]

INSTALLED_APPS = ["chat.apps.ChatConfig"]
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
    },
}
