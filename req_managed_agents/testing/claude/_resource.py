"""The verbs the Claude API's archivable resources answer alike.

Agents, environments, vaults and their credentials, and memory stores are read, listed
(oldest first; archived ones with ``include_archived``; by ``created_at[...]`` where the
list takes it), archived (once: archiving again changes nothing, as on the service) and,
all but agents, deleted (answered ``{"id", "type": "<type>_deleted"}``) the same way. What
is each one's own - its create and update bodies, what archiving or deleting it takes with
it or refuses - each module gives.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, ClassVar

from req_managed_agents.testing.claude._wire import (
    ID,
    _archive,
    _flag,
    _json_object,
    _time_filter,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from req_managed_agents.testing.claude._state import ClaudeState
    from req_managed_agents.testing.server import Exchange, Records, Route


class Resource:
    """The shared routes of one kind of resource: ``path`` is its collection (``{path}/{id}``
    one of it; a path with ids of its own, such as a vault's credentials, passes them first
    to every verb). A kind adds its create and update routes to :meth:`routes`."""

    # The created_at[...] bounds the list takes (none: it ignores them).
    created_bounds: ClassVar[tuple[str, ...]] = ()
    deletable: ClassVar[bool] = True

    def __init__(self, state: ClaudeState, records: Records[dict[str, Any]], path: str) -> None:
        self._state = state
        self._records = records
        self._path = path

    def routes(self) -> list[Route]:
        one = f"{self._path}/{ID}"
        routes: list[Route] = [
            ("GET", self._path, self._list),
            ("GET", one, self._get),
            ("POST", f"{one}/archive", self._archive),
        ]
        if self.deletable:
            routes.append(("DELETE", one, self._delete))
        return routes

    def find(self, *ids: str) -> dict[str, Any]:
        """A record by the ids of its path (its own last); the API's 404 for an unknown one."""
        return self._records.find(ids[-1])

    def _listed(self, *ids: str) -> Iterable[dict[str, Any]]:
        """The records a list at ``ids`` answers from, archived ones included."""
        return self._records.values()

    def _archived(self, record: dict[str, Any]) -> None:
        """What archiving a record changes besides it."""

    def _deleting(self, record: dict[str, Any]) -> None:
        """Refuse to delete a record (raise the API's error), or delete what goes with it."""

    def _get(self, exchange: Exchange, *ids: str) -> dict[str, Any]:
        with self._state.condition:
            return copy.deepcopy(self.find(*ids))

    def _list(self, exchange: Exchange, *ids: str) -> dict[str, Any]:
        request = exchange.request
        archived = _flag(request, "include_archived")
        created = _time_filter(request, bounds=self.created_bounds) if self.created_bounds else None
        with self._state.condition:
            records = [
                r
                for r in self._listed(*ids)
                if (archived or not r["archived_at"]) and (not created or created(r["created_at"]))
            ]
            return self._state.page(request, records)

    def _archive(self, exchange: Exchange, *ids: str) -> dict[str, Any]:
        _json_object(exchange.request, optional=True)
        with self._state.condition:
            record = self.find(*ids)
            if _archive(record):
                self._archived(record)
            return copy.deepcopy(record)

    def _delete(self, exchange: Exchange, *ids: str) -> dict[str, Any]:
        with self._state.condition:
            record = self.find(*ids)
            self._deleting(record)
            del self._records[record["id"]]
        return {"id": record["id"], "type": f"{record['type']}_deleted"}
