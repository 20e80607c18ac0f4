"""Tools the driver tests share: they count executions and record every event."""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping
from typing import Any

from req_managed_agents import ToolContext, Tools
from req_managed_agents.model import SessionInfo


class CountingTools(Tools):
    """An ``add`` tool that counts executions per tool use id, and records every event."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: collections.Counter[str] = collections.Counter()
        self.events: list[Mapping[str, Any]] = []
        self.lock = threading.Lock()

        @self.tool
        def add(a: int, b: int, context: ToolContext) -> int:
            """Add two integers."""
            with self.lock:
                self.calls[context.tool_use_id] += 1
            return a + b

    def handle_event(self, event: Mapping[str, Any], info: SessionInfo) -> None:
        self.events.append(event)
