"""Reading a body that is not streamed, and no further than a limit.

``requests`` reads a whole body into memory before it hands a response over: a service (or
a proxy) answering a gigabyte would take the process's memory. The HTTP client sends every
request streamed and reads the body here instead: a successful answer up to
:data:`~req_managed_agents.transport._json.MAX_BODY_BYTES` (a longer one is a
:class:`~req_managed_agents.errors.MalformedResponseError`), an error's first
:data:`ERROR_BODY_BYTES` - what its message and type need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from req_managed_agents.transport._json import malformed

if TYPE_CHECKING:
    import requests

    from req_managed_agents.errors import MalformedResponseError

__all__ = ["ERROR_BODY_BYTES", "read_body", "too_long"]

# How much of an error answer is read: its message and type are at the start.
ERROR_BODY_BYTES = 64 * 1024
_READ_SIZE = 64 * 1024


def read_body(response: requests.Response, limit: int | None) -> bool:
    """Read the body into ``response.content``, up to ``limit`` bytes (None: all of it); a
    longer one is cut there and its connection closed, never to be reused. Whether it was
    read whole."""
    pieces: list[bytes] = []
    size = 0
    for piece in response.iter_content(_READ_SIZE):
        if limit is not None and size + len(piece) > limit:
            pieces.append(piece[: limit - size])
            response._content = b"".join(pieces)
            response.close()
            return False
        pieces.append(piece)
        size += len(piece)
    response._content = b"".join(pieces)
    return True


def too_long(
    response: requests.Response, what: str, limit: int | None, request_id_header: str
) -> MalformedResponseError:
    """The error for a successful answer to ``what`` that was longer than ``limit``."""
    problem = f"the answer is longer than {limit} bytes"
    request_id = response.headers.get(request_id_header)
    return malformed(response.status_code, what, problem, request_id)
