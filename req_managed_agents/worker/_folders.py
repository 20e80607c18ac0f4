"""Each session's own folder under the worker's workdir: ``<workdir>/<session_id>``.

The session id comes from the service, so it is checked before it names anything on disk:
one path segment of letters, digits, ``_`` and ``-`` (no ``.``, no ``/``, nothing that could
climb out). The folder is made with mode 0700, so other users of the machine cannot read
what the agent writes; one that exists already must be a real folder of ours - not a link a
previous session's commands planted to send this one elsewhere. Once the session has ended
its folder is removed, links inside it removed as links, never followed.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
from pathlib import Path

from req_managed_agents.errors import ConfigurationError

__all__ = ["remove_session_folder", "session_folder"]

_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def session_folder(workdir: Path, session_id: str) -> Path:
    """The session's folder under ``workdir``, made if missing (see the module)."""
    folder = _folder_of(workdir, session_id)
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


def remove_session_folder(workdir: Path, session_id: str) -> None:
    """Remove an ended session's folder, if there is one (a link in its place is only
    unlinked); an OSError when something in it cannot be removed."""
    folder = _folder_of(workdir, session_id)
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(folder)  # never follows a link (on platforms where it can tell)
    else:
        os.unlink(folder)


def _folder_of(workdir: Path, session_id: str) -> Path:
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise ConfigurationError(
            f"session id {session_id!r} cannot name a folder: it must be 1 to 128 letters, "
            "digits, '_' or '-'"
        )
    return workdir / session_id
