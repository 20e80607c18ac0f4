"""Lists cut into pages behind opaque page tokens, in an API's own paging dialect.

Most APIs page a list the same way under different names: a page size in the query (with a
default and a maximum), and an opaque token, handed out with a page, that the client sends
back for the next one (Claude's ``limit``/``page`` answered as ``next_page``, AWS's
``maxResults``/``nextToken``, Google's ``pageSize``/``pageToken`` answered as
``nextPageToken``). A token names the *key* its page starts at in one list: keyed by
position, a list pages by offset; keyed by something stable (an order of creation), an item
removed between pages shifts nothing. A token works only for the list it came from: the
same path with the same filters (its other query parameters). One sent to another list, or
made up, is refused with the API's own 400, and so is a size out of range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.server._routes import new_id, query_value

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence
    from typing import Callable

    from req_managed_agents.testing.server._records import RecordedRequest


@dataclass(frozen=True)
class Page:
    """One page of a list: its ``items``, the token of the next page (None: it is the
    last), the key it starts at (None: the list's start) and its size."""

    items: list[Any]
    next_token: str | None
    start: Any
    size: int


class PageTokens:
    """The page tokens one API handed out, and the dialect it reads them in.

    ``size`` and ``token`` are the names of the query parameters of the page size and of the
    token; ``refuse(name, problem)`` makes the API's 400 for a bad value of one of them;
    ``ignored`` names the query parameters that are no filter (a client's markers).
    """

    def __init__(
        self,
        size: str,
        token: str,
        refuse: Callable[[str, str], Exception],
        ignored: Collection[str] = (),
    ) -> None:
        self._paging = frozenset({size, token, *ignored})
        self._size = size
        self._token = token
        self._refuse = refuse
        self._starts: dict[str, tuple[str, Any]] = {}  # token -> (its list, key it starts at)

    def cut(
        self,
        request: RecordedRequest,
        keyed: Sequence[tuple[Any, Any]],
        default_size: int,
        max_size: int,
    ) -> Page:
        """The page the request asks for (of ``default_size`` items, or as many as it asks
        for, up to ``max_size``) of ``keyed`` ``(key, item)`` pairs (ascending keys): the
        first, or the one its token starts. Call with the emulator's lock held."""
        size = default_size
        raw_size = query_value(request, self._size)
        if raw_size is not None:
            if not raw_size.isdigit() or not 1 <= int(raw_size) <= max_size:
                raise self._refuse(self._size, f"must be an integer from 1 to {max_size}")
            size = int(raw_size)
        start = None
        token = query_value(request, self._token)
        if token is not None:
            found = self._starts.get(token)
            if found is None or found[0] != self._list(request):
                raise self._refuse(self._token, "must be a token from a previous page")
            start = found[1]
        remaining = [pair for pair in keyed if start is None or pair[0] >= start]
        next_token = self.token(request, remaining[size][0]) if len(remaining) > size else None
        return Page([item for _, item in remaining[:size]], next_token, start, size)

    def token(self, request: RecordedRequest, start: Any) -> str:
        """A new token for the page that starts at key ``start`` of the request's list."""
        token = new_id("page")
        self._starts[token] = (self._list(request), start)
        return token

    def _list(self, request: RecordedRequest) -> str:
        """Which list a request reads: its path and its filters."""
        filters = sorted((k, v) for k, v in request.query.items() if k not in self._paging)
        return f"{request.path}?{filters}"
