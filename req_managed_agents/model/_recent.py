"""A set that keeps only its most recent members, so that what a long session remembers in
order to drop duplicates stays bounded: a duplicate arrives close to its first copy."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

__all__ = ["RecentSet"]


class RecentSet:
    """Membership of the last ``size`` members added (not thread-safe: guard it)."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self.size = size
        self._members: OrderedDict[Hashable, None] = OrderedDict()

    def __contains__(self, member: object) -> bool:
        return member in self._members

    def __len__(self) -> int:
        return len(self._members)

    def add(self, member: Hashable) -> bool:
        """Add ``member``; ``False`` if it was there already."""
        if member in self._members:
            return False
        self._members[member] = None
        if len(self._members) > self.size:
            self._members.popitem(last=False)
        return True
