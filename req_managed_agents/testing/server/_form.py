"""``multipart/form-data`` bodies (file uploads), split exactly, binary parts included."""

from __future__ import annotations

import email.message
import email.parser
import email.utils
from dataclasses import dataclass, field


@dataclass(frozen=True)
class FormPart:
    """One field of a ``multipart/form-data`` body; ``filename`` and ``content_type`` are
    None when the part does not carry them (APIs differ in what they require)."""

    name: str
    filename: str | None
    content_type: str | None
    data: bytes = field(repr=False)


def parse_form_data(body: bytes, content_type: str) -> list[FormPart]:
    """The parts of a ``multipart/form-data`` body (RFC 7578), in order.

    ``content_type`` is the request's header, which names the boundary. Raises ValueError
    when the body is not well-formed form data. Parts are cut at the delimiters by hand so
    that binary data (NUL bytes, line breaks of any kind) comes back byte for byte; only the
    small part headers go through :mod:`email`, for its parameter quoting rules.
    """
    head = email.message.Message()
    head["content-type"] = content_type
    if head.get_content_type() != "multipart/form-data":
        raise ValueError(f"the content type is {content_type!r}, not multipart/form-data")
    boundary = head.get_boundary()
    if not boundary:
        raise ValueError("the content type names no boundary")
    # Every delimiter follows a line break; one is added so the first needs no special case.
    sections = (b"\r\n" + body).split(b"\r\n--" + boundary.encode("latin-1"))
    parts: list[FormPart] = []
    for section in sections[1:]:  # sections[0] is the preamble
        if section.startswith(b"--"):
            return parts  # the closing delimiter; what follows is the epilogue
        padding, line_end, content = section.partition(b"\r\n")
        if not line_end or padding.strip(b" \t"):
            raise ValueError("a delimiter line is malformed, or the body is cut short")
        if content.startswith(b"\r\n"):  # a part without headers
            header_block, data = b"", content[2:]
        else:
            header_block, blank_line, data = content.partition(b"\r\n\r\n")
            if not blank_line:
                raise ValueError("a part's headers do not end with a blank line")
        parts.append(_form_part(header_block, data))
    raise ValueError("the body has no closing delimiter" if parts else "the body has no parts")


def _form_part(header_block: bytes, data: bytes) -> FormPart:
    headers = email.parser.HeaderParser().parsestr(header_block.decode("utf-8", "replace"))
    if headers.get_content_disposition() != "form-data":
        raise ValueError("a part has no 'content-disposition: form-data' header")
    name = headers.get_param("name", header="content-disposition")
    if not name:
        raise ValueError("a part has no name")
    filename = headers.get_param("filename", header="content-disposition")
    return FormPart(
        name=email.utils.collapse_rfc2231_value(name),
        filename=None if filename is None else email.utils.collapse_rfc2231_value(filename),
        content_type=headers.get("content-type"),
        data=data,
    )
