"""The ``read``, ``write`` and ``edit`` tools, on paths confined by :mod:`._paths`.

``read`` answers a file's text as it is (a ``view_range`` of 1-based, inclusive lines
selects part of it; an end of 0 or less means the last line), or an image or PDF as a
content block. ``write`` and ``edit`` never write into an existing file: they write a new
one beside it and rename it over the old, so a reader never sees half a file and a hard
link planted in the workdir cannot carry a write to the file it shares. Each holds the
file's lock (:mod:`._locks`) from its read to its rename, so concurrent changes of one
file all land.
"""

from __future__ import annotations

import codecs
import errno
import os
import secrets
import stat
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import IO, Any

from req_managed_agents.model._vocabulary import Document, Image, ToolResult
from req_managed_agents.tools._handler import ToolContext
from req_managed_agents.toolset._failure import ToolFailure, shown
from req_managed_agents.toolset._inputs import optional_flag, required_text
from req_managed_agents.toolset._locks import holding
from req_managed_agents.toolset._paths import CREATE_FILE, OPEN_FILE, Location, Workdir

__all__ = ["FileTools"]

EDIT_MAX_BYTES = 4 * 1024 * 1024
"""The largest file ``edit`` loads whole into memory."""
IMAGE_MAX_BYTES = 3_750_000
"""The largest image ``read`` returns: 5 MB once base64-encoded, the API's limit."""
PDF_MAX_BYTES = 20 * 1024 * 1024
"""The largest PDF ``read`` returns."""
MEDIA_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".pdf": "application/pdf",
}
"""Files ``read`` answers as content blocks, by extension, rather than as text."""

_CHUNK = 64 * 1024


@dataclass(frozen=True)
class FileTools:
    """The three file tools over one working directory; ``max_output`` bounds what
    ``read`` answers, in characters."""

    workdir: Workdir
    max_output: int

    def read(self, input: Mapping[str, Any], context: ToolContext) -> ToolResult:
        """Answer a ``read`` call."""
        given = input.get("file_path")
        parts = self.workdir.parts(given, "file_path")
        view = _view_range(input.get("view_range"))
        with self.workdir.locate(parts) as location:
            fd = _open_regular(location)
        with os.fdopen(fd, "rb") as file:
            media_type = MEDIA_TYPES.get(os.path.splitext(location.name)[1].lower())
            if media_type is not None:
                if view is not None:
                    raise ToolFailure("view_range does not apply to images and PDFs")
                return ToolResult.of_blocks(context.tool_use_id, [_media(file, media_type)])
            if view is not None:
                return ToolResult(context.tool_use_id, self._lines(file, *view))
            size = os.fstat(file.fileno()).st_size
            if size > self.max_output:
                raise ToolFailure(
                    f"{shown(str(given))} is {size} bytes, more than the {self.max_output} "
                    "this tool answers at once; read parts of it with view_range, "
                    "e.g. [1, 500]"
                )
            return ToolResult(context.tool_use_id, _decoded(file.read(self.max_output + 1)))

    def write(self, input: Mapping[str, Any], context: ToolContext) -> ToolResult:
        """Answer a ``write`` call: the whole file, parents created inside the workdir."""
        given = input.get("file_path")
        parts = self.workdir.parts(given, "file_path")
        data = _encoded(required_text(input, "content"))
        with self.workdir.locate(parts, create_dirs=True) as location, holding(location):
            _replace(location, data)
        return ToolResult(context.tool_use_id, f"wrote {len(data)} bytes to {given}")

    def edit(self, input: Mapping[str, Any], context: ToolContext) -> ToolResult:
        """Answer an ``edit`` call: ``old_string`` must occur once unless ``replace_all``."""
        given = input.get("file_path")
        parts = self.workdir.parts(given, "file_path")
        old = required_text(input, "old_string")
        new = required_text(input, "new_string")
        replace_all = optional_flag(input, "replace_all")
        if not old:
            raise ToolFailure("old_string is empty; use write to create or replace a file")
        with self.workdir.locate(parts) as location, holding(location):
            with os.fdopen(_open_regular(location), "rb") as file:
                if os.fstat(file.fileno()).st_size > EDIT_MAX_BYTES:
                    raise ToolFailure(
                        f"{given} is larger than {EDIT_MAX_BYTES} bytes, too large to edit"
                    )
                text = _decoded(file.read(EDIT_MAX_BYTES + 1))
            count = text.count(old)
            if count == 0:
                raise ToolFailure(f"old_string not found in {given}")
            if count > 1 and not replace_all:
                raise ToolFailure(
                    f"old_string appears {count} times in {given}; it must be unique, "
                    "so give more surrounding text, or set replace_all"
                )
            updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
            data = _encoded(updated)
            if len(data) > EDIT_MAX_BYTES:
                raise ToolFailure(f"the edit would make {given} larger than {EDIT_MAX_BYTES} bytes")
            _replace(location, data)
        replaced = count if replace_all else 1
        return ToolResult(context.tool_use_id, f"edited {given} ({replaced} replacement(s))")

    def _lines(self, file: IO[bytes], start: int, end: int) -> str:
        """Lines ``start``..``end`` (end <= 0: to the last), read a bounded piece at a
        time so that neither a huge file nor a huge line is loaded whole."""
        decoder = codecs.getincrementaldecoder("utf-8")()
        kept: list[str] = []
        size, number, truncated, at_line_start = 0, 0, False, True
        while end <= 0 or number < end or not at_line_start:
            piece = file.readline(_CHUNK)
            if not piece:
                break
            if at_line_start:
                number += 1
            at_line_start = piece.endswith(b"\n")
            if number < start:
                continue
            if size > self.max_output:
                truncated = True
                break
            text = _decoded(piece, decoder, final=False)
            kept.append(text)
            size += len(text)
        if not truncated:
            kept.append(_decoded(b"", decoder, final=True))
        text = "".join(kept)
        if text.endswith("\n"):
            text = text[:-1]
        if truncated or len(text) > self.max_output:
            return (
                text[: self.max_output] + f"\n[output truncated at {self.max_output} characters; "
                "read a smaller view_range]"
            )
        return text


def _view_range(value: object) -> tuple[int, int] | None:
    if value is None:
        return None
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise ToolFailure("view_range must be [start_line, end_line], two integers")
    start, end = value
    if start < 1:
        raise ToolFailure("view_range starts at line 1")
    if 0 < end < start:
        raise ToolFailure("view_range ends before it starts")
    return start, end


def _open_regular(location: Location) -> int:
    """Open the file ``location`` names for reading; a directory, FIFO or device is
    refused before a read could block on it."""
    if location.name == ".":
        raise IsADirectoryError(errno.EISDIR, "is a directory")
    fd = os.open(location.name, OPEN_FILE, dir_fd=location.dir_fd)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        raise ToolFailure("not a regular file")
    os.set_blocking(fd, True)
    return fd


def _media(file: IO[bytes], media_type: str) -> Image | Document:
    limit = PDF_MAX_BYTES if media_type == "application/pdf" else IMAGE_MAX_BYTES
    data: bytes = file.read(limit + 1)
    if len(data) > limit:
        raise ToolFailure(f"the file is larger than the {limit} bytes allowed for this type")
    if not data:
        raise ToolFailure("the file is empty")
    if media_type == "application/pdf":
        return Document(data, media_type)
    return Image(data, media_type)


def _decoded(
    data: bytes, decoder: codecs.IncrementalDecoder | None = None, *, final: bool = True
) -> str:
    try:
        return data.decode("utf-8") if decoder is None else decoder.decode(data, final)
    except UnicodeDecodeError:
        raise ToolFailure(
            "not valid UTF-8 text (only images and PDFs are read as binary)"
        ) from None


def _encoded(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolFailure("content cannot be encoded as UTF-8") from None


def _replace(location: Location, data: bytes) -> None:
    """Put ``data`` at ``location`` by writing a new file beside it, syncing it and
    renaming it over the old one (whose permission bits it keeps)."""
    if location.name == ".":
        raise IsADirectoryError(errno.EISDIR, "is a directory")
    dir_fd, name = location.dir_fd, location.name
    mode = None
    try:
        old = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISDIR(old.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if stat.S_ISREG(old.st_mode):
            mode = stat.S_IMODE(old.st_mode)
    temporary = f".rma-write-{secrets.token_hex(8)}.tmp"
    fd = os.open(temporary, CREATE_FILE, 0o666, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            if mode is not None:
                os.fchmod(file.fileno(), mode)
            os.fsync(file.fileno())
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)
        raise
    os.fsync(dir_fd)
