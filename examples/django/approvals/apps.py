from __future__ import annotations

from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    """The approvals page. Nothing happens at start-up: the store, the Redis client and the
    Celery task are built or imported on first use, so the chat pages run with Django alone
    (the approvals need ``celery`` and ``redis`` too)."""

    name = "approvals"
