"""The artifact store protocol and the name rule every store enforces.

Artifacts are a session's files, addressed by name. Names are checked before any request is
made: no path separators, no ``..``, no NUL or control characters, nothing a shell would
interpret, and a bounded length - so a name can neither leave the session's folder nor
change the meaning of a command that carries it.
"""

from __future__ import annotations

import re
from typing import Protocol, runtime_checkable

from req_managed_agents.errors import InvalidArtifactNameError
from req_managed_agents.model._vocabulary import Artifact

__all__ = ["MAX_NAME_LENGTH", "ArtifactStore", "check_name"]

MAX_NAME_LENGTH = 200
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-]*")


@runtime_checkable
class ArtifactStore(Protocol):
    """A session's files, by name (the newest wins where a provider keeps duplicates)."""

    def list(self) -> list[Artifact]:
        """Every artifact of the session."""
        ...

    def fetch(self, name: str) -> bytes:
        """The bytes of the artifact ``name``."""
        ...

    def put(self, name: str, data: bytes) -> Artifact:
        """Store ``data`` as ``name`` and describe it."""
        ...

    def delete(self, name: str) -> None:
        """Remove the artifact ``name``."""
        ...


def check_name(name: str) -> str:
    """``name`` if it is a safe artifact name, else :class:`InvalidArtifactNameError`."""
    if not isinstance(name, str) or not name:
        raise InvalidArtifactNameError(str(name), "it must be a non-empty string")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidArtifactNameError(name, f"it is longer than {MAX_NAME_LENGTH} characters")
    if name in (".", "..") or ".." in name:
        raise InvalidArtifactNameError(name, "'..' could leave the session's folder")
    if not _NAME.fullmatch(name):
        raise InvalidArtifactNameError(
            name,
            "use letters, digits, '.', '_' and '-' (starting with a letter or digit); "
            "no '/', spaces, quotes or shell characters",
        )
    return name
