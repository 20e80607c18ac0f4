from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core import checks


class ChatConfig(AppConfig):
    name = "chat"

    def ready(self) -> None:
        # Only idempotent, cheap work here. ``runserver`` runs ready() in two processes (the
        # autoreloader's parent, which only watches files, and the child serving requests,
        # re-created on every reload), and tests may run it again: a provider built here would
        # exist twice, once where it can never be used. chat.agent builds it on first use.
        checks.register(check_agent_settings)  # registering twice is a no-op


def check_agent_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``manage.py check`` (and ``runserver``, which then refuses to start) tell a missing key
    or id before the first request would fail with a server error."""
    problems: list[checks.CheckMessage] = []
    if not settings.ANTHROPIC_API_KEY:
        problems.append(
            checks.Error(
                "ANTHROPIC_API_KEY is not set; every agent view would fail",
                hint="export it, or run the site under `python emulator.py` (no key needed)",
                id="chat.E001",
            )
        )
    problems += [
        checks.Warning(f"{name} is not set; the agent views will fail", id=f"chat.W00{n}")
        for n, name in enumerate(("CLAUDE_AGENT_ID", "CLAUDE_ENVIRONMENT_ID"), start=1)
        if not getattr(settings, name)
    ]
    return problems
