"""The records of one kind of resource, by id: found, or answered with the API's 404.

Every API keeps its resources (agents, sessions, files, harnesses, ...) by id, in the order
made, and words its own 404 for an id it does not hold. A record the API deleted but a test
may still look at (a session and its log) stays, ``gone``: a 404 to the API, found by tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from typing import Callable

_Record = TypeVar("_Record")


class Records(dict[str, _Record]):
    """The records of one ``kind`` of resource by id, oldest first.

    ``missing(kind, id)`` is the error the API answers for an id it does not hold, or for a
    record it deleted but keeps for tests (``gone(record)`` true).
    """

    def __init__(
        self,
        kind: str,
        missing: Callable[[str, str], Exception],
        gone: Callable[[_Record], bool] | None = None,
    ) -> None:
        super().__init__()
        self.kind = kind
        self._missing = missing
        self._gone = gone

    def find(self, record_id: str) -> _Record:
        """The record of ``record_id``; the API's 404 for an unknown or a gone one."""
        record = self.get(record_id)
        if record is None or (self._gone is not None and self._gone(record)):
            raise self._missing(self.kind, record_id)
        return record

    def known(self, record_id: str) -> _Record:
        """For a test: the record of ``record_id``, gone or not; a ``KeyError`` otherwise."""
        record = self.get(record_id)
        if record is None:
            raise KeyError(f"no {self.kind} {record_id!r} in this emulator")
        return record

    def remove(self, record_id: str) -> _Record:
        """Delete the record of ``record_id`` and return it; the API's 404 for an unknown one."""
        record = self.find(record_id)
        del self[record_id]
        return record
