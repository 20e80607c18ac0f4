"""The state every resource of the Claude emulator shares: its data, and the lock guarding it.

Each resource (agents, sessions, files, ...) keeps no data of its own: it reads and changes
the :class:`ClaudeState` it was given, under ``condition``, the emulator's one lock (see
:class:`~req_managed_agents.testing.server.Lifecycle`), notifying it when a waiter may care.
The resources are kept in :class:`~req_managed_agents.testing.server.Records`, which find
one or answer the API's 404. Besides the data, the state cuts lists into pages behind
opaque cursors, as every resource needs.
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._wire import (
    _DEFAULT_PAGE,
    _MAX_RESOURCE_PAGE,
    _APIError,
    _coded,
    _invalid,
    _not_found,
)
from req_managed_agents.testing.server import PageTokens, Records

if TYPE_CHECKING:
    import threading

    from req_managed_agents.testing.claude._model import _Session, _StoredFile, _WorkItem
    from req_managed_agents.testing.claude._turn import Turn
    from req_managed_agents.testing.server import RecordedRequest


def _invalid_parameter(name: str, problem: str) -> _APIError:
    return _invalid(f"{name}: {problem}")


def _coded_not_found(kind: str, object_id: str) -> _APIError:
    """The 404 of a kind whose absence the API names a code for (``environment_not_found``)."""
    return _coded(f"{kind}_not_found", f"{kind} {object_id!r} was not found")


class ClaudeState:
    """The Claude emulator's data, guarded by ``condition``."""

    def __init__(self, condition: threading.Condition) -> None:
        self.condition = condition
        self.bedrock = False  # Claude Managed Agents on Amazon Bedrock (its session shape)
        # The latest version of each agent.
        self.agents: Records[dict[str, Any]] = Records("agent", _not_found)
        self.agent_versions: dict[str, list[dict[str, Any]]] = {}  # every version, oldest first
        self.agent_scripts: dict[str, tuple[Turn, ...]] = {}
        self.environments: Records[dict[str, Any]] = Records("environment", _coded_not_found)
        # A deleted session is a 404 to the API, and stays for tests.
        self.sessions: Records[_Session] = Records("session", _not_found, lambda s: s.deleted)
        self.files: Records[_StoredFile] = Records("file", _not_found)
        # The creation time of the newest file, so that a newer one never ties with it.
        self.last_file_time = datetime.min.replace(tzinfo=timezone.utc)
        self.tokens: dict[str, str] = {}  # repository resource id -> its authorization token
        self.vaults: Records[dict[str, Any]] = Records("vault", _not_found)
        # By credential id, across vaults.
        self.credentials: Records[dict[str, Any]] = Records("credential", _not_found)
        self.memory_stores: Records[dict[str, Any]] = Records("memory store", _not_found)
        # Store id -> its memories, and its memory versions (oldest first).
        self.memories: dict[str, Records[dict[str, Any]]] = {}
        self.memory_versions: dict[str, Records[dict[str, Any]]] = {}
        # Self-hosted environments: their work items (oldest first), their keys, the live
        # sessions token of each item handed out, and when each worker last polled.
        self.work: dict[str, _WorkItem] = {}
        self.environment_keys: dict[str, str] = {}  # environment id -> its key
        self.work_tokens: dict[str, str] = {}  # sessions token -> work item id
        self.workers_polling: dict[str, dict[str, float]] = {}  # env id -> worker -> time
        # "beta=true" is no filter: the SDK's marker of beta paths.
        self._pages = PageTokens("limit", "page", _invalid_parameter, ignored=("beta",))

    def page(
        self,
        request: RecordedRequest,
        items: list[Any],
        *,
        max_limit: int = _MAX_RESOURCE_PAGE,
        with_prev: bool = False,
        default_limit: int = _DEFAULT_PAGE,
    ) -> dict[str, Any]:
        """Cut ``items`` into pages behind opaque cursors (``limit`` and ``page``, answered
        as ``next_page``, and ``prev_page`` ``with_prev``)."""
        page = self._pages.cut(request, list(enumerate(items)), default_limit, max_limit)
        result = {"data": copy.deepcopy(page.items), "next_page": page.next_token}
        if with_prev:
            offset = page.start or 0
            previous = max(0, offset - page.size)
            result["prev_page"] = self._pages.token(request, previous) if offset else None
        return result
