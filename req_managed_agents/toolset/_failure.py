"""How a refused or failed call reads to the agent.

A tool of the toolset never raises at the worker: it raises :class:`ToolFailure`, whose
message is written for the agent, and the toolset turns it into an ``is_error`` result.
Operating-system errors are named by a fixed phrase, never by their ``str()``, which
carries the host path the kernel saw.
"""

from __future__ import annotations

import errno

__all__ = ["ToolFailure", "describe_os_error", "shown"]

_REASONS = {
    errno.ENOENT: "no such file or directory",
    errno.ENOTDIR: "not a directory",
    errno.EISDIR: "is a directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EEXIST: "file already exists",
    errno.ELOOP: "too many levels of symbolic links",
    errno.ENAMETOOLONG: "file name too long",
    errno.ENOSPC: "no space left on device",
    errno.EROFS: "read-only file system",
    errno.EBUSY: "device or resource busy",
    errno.EXDEV: "crosses a file system boundary",
}

SHOWN_CHARS = 120
"""How much of an agent-given path or pattern an error message repeats."""


class ToolFailure(Exception):
    """A call the toolset refuses or cannot finish; the message goes to the agent."""


def describe_os_error(exc: OSError) -> str:
    """A fixed phrase for ``exc`` that names no host path."""
    reason = _REASONS.get(exc.errno or 0)
    if reason is not None:
        return reason
    return (exc.strerror or "input/output error").lower()


def shown(value: str) -> str:
    """``value`` quoted for a message, shortened so a huge input cannot flood it."""
    if len(value) > SHOWN_CHARS:
        value = value[:SHOWN_CHARS] + "..."
    return repr(value)
