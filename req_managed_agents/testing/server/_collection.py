"""The records of one kind of resource, by id: found, or answered with the API's 404.

Every API keeps its resources (agents, sessions, files, harnesses, ...) by id, in the order
they were made, and answers an id it does not hold with its own "not found" error. A
:class:`Records` is that dict, knowing its kind and how its API words the 404, so that a
route finds a record (or answers the 404) in one call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from typing import Callable

_Record = TypeVar("_Record")


class Records(dict[str, _Record]):
    """The records of one ``kind`` of resource by id, oldest first.

    ``missing(kind, id)`` is the error the API answers for an id it does not hold.
    """

    def __init__(self, kind: str, missing: Callable[[str, str], Exception]) -> None:
        super().__init__()
        self.kind = kind
        self._missing = missing

    def find(self, record_id: str) -> _Record:
        """The record of ``record_id``; the API's 404 for an unknown one."""
        record = self.get(record_id)
        if record is None:
            raise self._missing(self.kind, record_id)
        return record

    def remove(self, record_id: str) -> _Record:
        """Delete the record of ``record_id`` and return it; the API's 404 for an unknown one."""
        record = self.find(record_id)
        del self[record_id]
        return record
