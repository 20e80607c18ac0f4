"""``python manage.py start_run "Delete the build folder."``: start a run that stops for a
person, and print what it waits for.

The session's provider tools ask for permission (``confirm="defer"``: no hook, the question
waits in the decisions store), so the run ends with ``terminal="requires_action"`` and this
process exits; the approvals page lists the question, and a Celery worker continues the
session once someone answers it.
"""

from __future__ import annotations

from typing import Any

from chat.agent import get_provider
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from req_managed_agents import Tools, run_to_completion
from req_managed_agents.errors import ManagedAgentsError

from ...agent import decisions, describe, ledger


class Command(BaseCommand):
    help = "Start an agent run whose permission questions wait on the approvals page."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("prompt", nargs="?", default="Delete the build folder.")

    def handle(self, *args: Any, prompt: str, **options: Any) -> None:
        agent_id = settings.CLAUDE_APPROVALS_AGENT_ID
        if not agent_id:
            raise CommandError("set CLAUDE_APPROVALS_AGENT_ID (python emulator.py sets it)")
        try:
            result = run_to_completion(
                get_provider(),
                prompt,
                handler=Tools(),  # your tools here; those that return Deferred wait too
                decisions=decisions(),
                confirm="defer",
                ledger=ledger(),
                agent_id=agent_id,
                environment_id=settings.CLAUDE_ENVIRONMENT_ID,
                timeout=settings.AGENT_RUN_TIMEOUT,
            )
        except ManagedAgentsError as exc:
            raise CommandError(f"the run failed: {exc}") from exc
        if result.text:
            self.stdout.write(f"agent: {result.text}")
        if result.terminal != "requires_action":
            self.stdout.write(f"the run ended ({result.terminal}); nothing waits")
            return
        for decision in result.pending:
            self.stdout.write(f"waiting: {describe(decision)} [{decision.token[:8]}...]")
        self.stdout.write("answer it at /approvals/ (a Celery worker continues the session)")
