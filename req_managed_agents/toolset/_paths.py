"""Confinement of the file tools to the working directory.

A path the agent gives is first checked as text - its type, length, NUL bytes, ``..`` -
and only then walked, one name at a time, from a descriptor of the working directory.
Each step opens the next directory relative to the one before with ``O_NOFOLLOW``, so the
kernel never follows a symbolic link for us: a link met on the way is read and followed
by hand, and only while it stays inside. A link that leads out - to an absolute path
elsewhere, or up with more ``..`` than there are directories above it - refuses the whole
path, even when its target does not exist. Every step works on a descriptor already held,
so a link planted between the check and the use is met as a link and judged, never
followed blindly; a file is finally opened, or replaced, by its name in a directory
descriptor, again without following a link.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from req_managed_agents.errors import ConfigurationError
from req_managed_agents.toolset._failure import ToolFailure, shown

__all__ = [
    "CREATE_FILE",
    "NAME_MAX",
    "OPEN_DIRECTORY",
    "OPEN_FILE",
    "PATH_MAX",
    "Location",
    "Workdir",
    "open_directory",
]

PATH_MAX = 4096
"""The longest path, in bytes, a tool accepts (Linux's ``PATH_MAX``)."""
NAME_MAX = 255
"""The longest name of one file or directory, in bytes."""
MAX_LINK_HOPS = 40
"""Symbolic links followed for one path before it counts as a loop (as Linux counts)."""
MAX_STEPS = 4 * PATH_MAX
"""Names walked for one path, links included: a bound however the links are laid."""

# Never through a link, never inherited by a child; a FIFO or device is not waited on
# when opened (the callers refuse what is not a regular file). Absent names (Windows,
# where AgentToolset refuses to start) read as 0 so that importing still works.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
OPEN_DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW
OPEN_FILE = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NOFOLLOW
CREATE_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
_LEADS_OUT = "leads outside the working directory"


@dataclass(frozen=True)
class Location:
    """Where a path led: ``name`` inside the open directory ``dir_fd`` (``"."`` when the
    path named that directory itself); ``parts`` are the directories from the working
    directory down to ``dir_fd``, real names with no link among them."""

    dir_fd: int
    name: str
    parts: tuple[str, ...]

    @property
    def inner(self) -> tuple[str, ...]:
        """The names from the working directory to the target itself."""
        return self.parts if self.name == "." else (*self.parts, self.name)


class Workdir:
    """The directory the file tools are confined to, and the walk that keeps them there."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise ConfigurationError(f"workdir must be a path, not {type(path).__name__}")
        spelled = os.path.abspath(os.fspath(path))
        if "\x00" in spelled:
            raise ConfigurationError("workdir contains a NUL byte")
        real = os.path.realpath(spelled)
        if not os.path.isdir(real):
            raise ConfigurationError(f"workdir {shown(spelled)} is not an existing directory")
        if real == os.path.dirname(real):
            raise ConfigurationError("workdir may not be the file system's root")
        info = os.stat(real)
        self.real = real
        self._identity = (info.st_dev, info.st_ino)
        self._prefixes = {tuple(_names(real)), tuple(_names(spelled))}

    def parts(self, path: object, field: str) -> list[str]:
        """The names below the working directory that ``path`` spells, refusing before
        any disk access whatever is not a plain path inside it."""
        if not isinstance(path, str):
            raise ToolFailure(f"{field} must be a string, not {type(path).__name__}")
        if not path:
            raise ToolFailure(f"{field} is empty")
        if "\x00" in path:
            raise ToolFailure(f"{field} contains a NUL byte")
        try:
            raw = os.fsencode(path)
        except UnicodeEncodeError:
            raise ToolFailure(f"{field} cannot be encoded as a file name") from None
        if len(raw) >= PATH_MAX:
            raise ToolFailure(f"{field} is longer than {PATH_MAX - 1} bytes")
        names = _names(path)
        if any(len(os.fsencode(name)) > NAME_MAX for name in names):
            raise ToolFailure(f"{field} holds a name longer than {NAME_MAX} bytes")
        if ".." in names:
            raise ToolFailure(
                f"{field} may not contain '..': give a path inside the working directory"
            )
        if path.startswith("/"):
            inside = self._below(names)
            if inside is None:
                raise ToolFailure(f"{field} {shown(path)} is outside the working directory")
            return inside
        return names

    def shown(self, inner: tuple[str, ...] | list[str]) -> str:
        """The absolute path the agent sees for ``inner`` (names below the workdir)."""
        return "/".join((self.real, *inner)) if inner else self.real

    @contextmanager
    def locate(self, parts: list[str], *, create_dirs: bool = False) -> Iterator[Location]:
        """Walk ``parts`` from the working directory, following links only while they
        stay inside; ``create_dirs`` makes the missing directories on the way. The last
        name need not exist. The directory descriptor is closed on leaving."""
        dir_fd, name, walked = self._walk(parts, create_dirs)
        try:
            yield Location(dir_fd, name, tuple(walked))
        finally:
            os.close(dir_fd)

    def contains(self, parts: list[str]) -> bool:
        """Whether ``parts`` lead somewhere inside (a link among them staying inside)."""
        try:
            with self.locate(parts):
                return True
        except (ToolFailure, OSError):
            return False

    def _below(self, names: list[str]) -> list[str] | None:
        """The names of an absolute path below the working directory, if it is there."""
        for prefix in self._prefixes:
            if tuple(names[: len(prefix)]) == prefix:
                return names[len(prefix) :]
        return None

    def _open_root(self) -> int:
        fd = os.open(self.real, OPEN_DIRECTORY)
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != self._identity:
            os.close(fd)
            raise ToolFailure("the working directory was moved or replaced")
        return fd

    def _open_walked(self, walked: list[str]) -> int:
        """A fresh descriptor of ``walked``, from the root: how ``..`` goes up without
        ever opening a ``..`` that a moved directory could turn into a way out."""
        fd = self._open_root()
        try:
            for name in walked:
                child = os.open(name, OPEN_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _walk(self, parts: list[str], create_dirs: bool) -> tuple[int, str, list[str]]:
        pending = list(reversed(parts))
        walked: list[str] = []
        hops = steps = 0
        fd = self._open_root()
        try:
            while pending:
                steps += 1
                if steps > MAX_STEPS:
                    raise OSError(errno.ELOOP, "too many steps")
                name = pending.pop()
                if name == "..":  # only a link's target brings one
                    if not walked:
                        raise ToolFailure(f"a symbolic link on the path {_LEADS_OUT}")
                    walked.pop()
                    os.close(fd)
                    fd = self._open_walked(walked)
                    continue
                try:
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    if not pending:
                        return fd, name, walked
                    if not create_dirs:
                        raise
                    with suppress(FileExistsError):
                        os.mkdir(name, 0o777, dir_fd=fd)
                    pending.append(name)  # stat it again: it may have changed meanwhile
                    continue
                if stat.S_ISLNK(info.st_mode):
                    hops += 1
                    if hops > MAX_LINK_HOPS:
                        raise OSError(errno.ELOOP, "symbolic link loop")
                    target = os.readlink(name, dir_fd=fd)
                    if target.startswith("/"):
                        inside = self._below(_names(target))
                        if inside is None:
                            raise ToolFailure(f"a symbolic link on the path {_LEADS_OUT}")
                        os.close(fd)
                        fd, walked = self._open_root(), []
                        pending.extend(reversed(inside))
                    else:
                        pending.extend(reversed(_names(target)))
                    continue
                if not pending:
                    return fd, name, walked
                if not stat.S_ISDIR(info.st_mode):
                    raise NotADirectoryError(errno.ENOTDIR, "not a directory")
                try:
                    child = os.open(name, OPEN_DIRECTORY, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a link now: not followed
                        raise ToolFailure("a directory on the path changed while in use") from None
                    raise
                os.close(fd)
                fd = child
                walked.append(name)
            return fd, ".", walked
        except BaseException:
            os.close(fd)
            raise


def open_directory(location: Location) -> int:
    """A descriptor of the directory ``location`` names (never through a link)."""
    return os.open(location.name, OPEN_DIRECTORY, dir_fd=location.dir_fd)


def _names(path: str) -> list[str]:
    """The names of ``path``, without the empty and ``.`` ones."""
    return [name for name in path.split("/") if name not in ("", ".")]
