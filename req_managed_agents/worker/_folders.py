"""Each session's own folder under the worker's workdir: ``<workdir>/<session_id>``.

The session id comes from the service, so it is checked before it names anything on disk:
one path segment of letters, digits, ``_`` and ``-`` (no ``.``, no ``/``, nothing that could
climb out). The folder is made with mode 0700, so other users of the machine cannot read
what the agent writes; one that exists already must be a real folder of ours - not a link a
previous session's commands planted to send this one elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path

from req_managed_agents.errors import ConfigurationError

__all__ = ["session_folder"]

_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def session_folder(workdir: Path, session_id: str) -> Path:
    """The session's folder under ``workdir``, made if missing (see the module)."""
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise ConfigurationError(
            f"session id {session_id!r} cannot name a folder: it must be 1 to 128 letters, "
            "digits, '_' or '-'"
        )
    folder = workdir / session_id
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise ConfigurationError(f"{str(folder)!r} exists and is not a folder (or is a link)")
    if info.st_uid != os.getuid():
        raise ConfigurationError(f"{str(folder)!r} belongs to another user")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(folder, 0o700)  # made before, or narrowed by a umask
    return folder
