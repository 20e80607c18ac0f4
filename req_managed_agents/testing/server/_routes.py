"""What every API's routes need alike: a route table, the query's values, ids and timestamps."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

if TYPE_CHECKING:
    from collections.abc import Sequence

    from req_managed_agents.testing.server._records import RecordedRequest

# A row of a route table: the method, the path pattern and the function that answers.
Route = tuple[str, str, Callable[..., Any]]


class Router:
    """A route table: ``(method, path pattern, route)`` rows, first match wins.

    A pattern must match the whole path; its groups (the ids in the path, percent-decoded)
    are the route's arguments after the exchange.
    """

    def __init__(self, routes: Sequence[Route]) -> None:
        self._routes = [(method, re.compile(path), route) for method, path, route in routes]

    def match(self, method: str, path: str) -> tuple[Callable[..., Any], tuple[str, ...]] | None:
        """The route for a request and the groups of its path; None when no row matches."""
        for route_method, pattern, route in self._routes:
            found = pattern.fullmatch(path)
            if found and route_method == method:
                return route, tuple(unquote(group) for group in found.groups())
        return None


def query_value(request: RecordedRequest, name: str) -> str | None:
    """The first value of the query parameter ``name``; None when the query lacks it."""
    values = request.query.get(name)
    return values[0] if values else None


def new_id(prefix: str) -> str:
    """A fresh object id: ``prefix``, an underscore and 24 random hex digits."""
    return f"{prefix}_{secrets.token_hex(12)}"


def utc_timestamp(moment: datetime | None = None, timespec: str = "milliseconds") -> str:
    """``moment`` (default: now) as an ISO 8601 UTC time ending in ``Z``."""
    if moment is None:
        moment = datetime.now(timezone.utc)
    return moment.isoformat(timespec=timespec).replace("+00:00", "Z")
