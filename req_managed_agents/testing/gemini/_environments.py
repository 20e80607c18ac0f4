"""Environments: ``/{v}/environments`` (create, list by ``mode``) and
``/{v}/environments/{id}`` (get, delete). The service makes the id (``env_<hex>``).

The body is ``CreateEnvironmentRequest`` (its fields only); ``from_environment``
(``environments/{id}`` or ``{id}``) copies that environment's sources, network and custom
config under what the body gives; ``mode`` is ``on_demand`` (the default) or
``self_hosted``. An environment answers as ``Environment``: ``active``, with its times and
what it was made with (never its system instruction, which ``Environment`` does not show).
Lists page as agents do.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.gemini._agents import (
    DEFAULT_PAGE,
    MAX_PAGE,
    check_fields,
    check_query,
)
from req_managed_agents.testing.gemini._wire import ENVIRONMENTS_PATH, ID, invalid, now
from req_managed_agents.testing.server import new_id, query_value

if TYPE_CHECKING:
    from req_managed_agents.testing.gemini._state import GeminiState
    from req_managed_agents.testing.server import Exchange, Route

_FIELDS = frozenset(
    {"sources", "mode", "network", "custom_config", "system_instruction", "from_environment"}
)
MODES = ("on_demand", "self_hosted")
_SOURCE_TYPES = frozenset({"gcs", "inline", "repository", "skill_registry"})
_INHERITED = ("sources", "network", "custom_config")


class Environments:
    """The environment routes, on the shared state."""

    def __init__(self, state: GeminiState) -> None:
        self._state = state

    def routes(self) -> list[Route]:
        return [
            ("POST", ENVIRONMENTS_PATH, self._create),
            ("GET", ENVIRONMENTS_PATH, self._list),
            ("GET", f"{ENVIRONMENTS_PATH}/{ID}", self._get),
            ("DELETE", f"{ENVIRONMENTS_PATH}/{ID}", self._delete),
        ]

    def new_environment(self, body: Any) -> dict[str, Any]:
        """Create an environment from a create body (checked here); with the lock held."""
        given = copy.deepcopy(check_fields(body, _FIELDS))
        mode = given.get("mode", "on_demand")
        if mode not in MODES:
            raise invalid(f"mode must be one of {list(MODES)}.")
        sources = given.get("sources", [])
        if not isinstance(sources, list) or any(
            not isinstance(s, dict) or s.get("type") not in _SOURCE_TYPES for s in sources
        ):
            raise invalid(f"Each source needs a type, one of {sorted(_SOURCE_TYPES)}.")
        if "custom_config" in given and not isinstance(given["custom_config"], dict):
            raise invalid("custom_config must be an object.")
        settings: dict[str, Any] = {}
        origin = given.get("from_environment")
        if origin is not None:
            if not isinstance(origin, str):
                raise invalid("from_environment must be an environment name.")
            base = self._state.environments.find(self._state.environment_named(origin))
            settings = {k: copy.deepcopy(base[k]) for k in _INHERITED if k in base}
        settings.update({k: given[k] for k in _INHERITED if k in given})
        made = now()
        environment = {
            "id": new_id("env"),
            "status": "active",
            "created": made,
            "updated": made,
            "mode": mode,
            **settings,
        }
        environment.setdefault("sources", [])
        self._state.environments[environment["id"]] = environment
        return environment

    def _create(self, exchange: Exchange) -> dict[str, Any]:
        check_query(exchange.request)
        with self._state.condition:
            return copy.deepcopy(self.new_environment(exchange.request.body))

    def _list(self, exchange: Exchange) -> dict[str, Any]:
        request = exchange.request
        check_query(request, ("page_size", "page_token", "mode"))
        mode = query_value(request, "mode")
        if mode is not None and mode not in MODES:
            raise invalid(f"mode must be one of {list(MODES)}.")
        with self._state.condition:
            keyed = self._state.page_keys(self._state.environments)
            keyed = [(key, env) for key, env in keyed if mode in (None, env["mode"])]
            page = self._state.pages.cut(request, keyed, DEFAULT_PAGE, MAX_PAGE)
        answer: dict[str, Any] = {"environments": page.items}
        if page.next_token is not None:
            answer["next_page_token"] = page.next_token
        return answer

    def _get(self, exchange: Exchange, environment_id: str) -> dict[str, Any]:
        check_query(exchange.request)
        with self._state.condition:
            return copy.deepcopy(self._state.environments.find(environment_id))

    def _delete(self, exchange: Exchange, environment_id: str) -> dict[str, Any]:
        check_query(exchange.request)
        with self._state.condition:
            self._state.environments.remove(environment_id)
        return {}
