"""The state every resource of the OpenAI emulator shares: its data, and the lock guarding it.

Each resource keeps no data of its own: it reads and changes the :class:`OpenAIState` it
was given, under ``condition``, the emulator's one lock; agents and sessions are kept in
:class:`~req_managed_agents.testing.server.Records`, which find one or answer the API's 404.
Besides the state, this module checks a route's query parameters and cuts lists into the
API's cursor pages: ``after`` (exclusive, an id of the list), ``limit`` (1 to 100, default
20) and ``order`` (``asc`` or ``desc``, the default).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.openai._schema import invalid_value
from req_managed_agents.testing.openai._wire import invalid, not_found
from req_managed_agents.testing.server import Records, query_value

if TYPE_CHECKING:
    import threading
    from collections.abc import Collection

    from req_managed_agents.testing.openai._model import Session
    from req_managed_agents.testing.openai._turn import OpenAITurn
    from req_managed_agents.testing.server import RecordedRequest

_PAGING = ("after", "limit", "order")
_DEFAULT_LIMIT = 20
_MAX_LIMIT = 100


class OpenAIState:
    """The OpenAI emulator's data, guarded by ``condition``."""

    def __init__(self, condition: threading.Condition, default_script: tuple[OpenAITurn, ...]):
        self.condition = condition
        self.default_script = default_script
        self.agents: Records[dict[str, Any]] = Records("agent", not_found)  # oldest first
        self.agent_scripts: dict[str, tuple[OpenAITurn, ...]] = {}
        # Oldest first; a deleted session is a 404 to the API, and stays for tests.
        self.sessions: Records[Session] = Records("session", not_found, lambda s: s.deleted)
        # Shots of refuse_unregistered_results: results refused as a registration race.
        self.race_shots = 0

    def script_of(self, agent_id: str | None) -> tuple[OpenAITurn, ...]:
        if agent_id is None:
            return self.default_script
        return self.agent_scripts.get(agent_id, self.default_script)


def check_query(request: RecordedRequest, allowed: Collection[str] = ()) -> None:
    """A 400 for a query parameter the route does not take (``metadata[key]`` counts as
    ``metadata``)."""
    for name in request.query:
        if name.split("[", 1)[0] not in (*allowed, *_PAGING):
            raise invalid(f"Unknown parameter: '{name}'.", param=name, code="unknown_parameter")


def page(
    request: RecordedRequest, records: list[dict[str, Any]], *, last_id: bool = False
) -> dict[str, Any]:
    """One cursor page of ``records`` (oldest first, each with an ``id``); ``last_id`` adds
    the cursor of the next page (the SDK's conversation pages follow it)."""
    order = query_value(request, "order") or "desc"
    if order not in ("asc", "desc"):
        raise invalid_value("order", "must be 'asc' or 'desc'.")
    raw_limit = query_value(request, "limit")
    try:
        limit = _DEFAULT_LIMIT if raw_limit is None else int(raw_limit)
    except ValueError:
        raise invalid_value("limit", "must be an integer.") from None
    if not 1 <= limit <= _MAX_LIMIT:
        raise invalid_value("limit", f"must be between 1 and {_MAX_LIMIT}.")
    ordered = records if order == "asc" else records[::-1]
    start = 0
    after = query_value(request, "after")
    if after is not None:
        ids = [record["id"] for record in ordered]
        if after not in ids:
            raise invalid_value("after", f"'{after}' is not an id of this list.")
        start = ids.index(after) + 1
    data = copy.deepcopy(ordered[start : start + limit])
    result: dict[str, Any] = {"data": data, "has_more": start + limit < len(ordered)}
    if last_id:
        result["last_id"] = data[-1]["id"] if data else None
    return result
