"""Keep credentials out of every string the library produces.

Two layers, because either alone leaks:

* :class:`Secret` holds a credential; its ``repr``/``str`` never show the value, and creating
  one registers the value with the process-wide redactor.
* :func:`redact` scrubs every registered value (and anything shaped like an Anthropic or
  OpenAI key or an AWS access key id) from a string. Error messages, log records and
  telemetry metadata pass through it, so a key echoed back by a server or embedded in a URL
  is still masked.

A leaf (it imports nothing of the package): ``errors``, ``telemetry`` and ``transport/`` use it.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import threading
from collections.abc import Mapping
from typing import Any

MASK = "[REDACTED]"

# Shapes worth masking even when the value was never registered (e.g. a key pasted into a
# prompt that an error message echoes back): Anthropic keys; OpenAI's project, service
# account, admin and user keys, and its older keys (``sk-`` and 48 letters and digits: a
# run of 32 or more is taken for one, so that ``sk-test`` stays readable); AWS access keys.
_KEY_SHAPES = re.compile(
    r"sk-ant-[A-Za-z0-9_\-]{8,}"
    r"|\bsk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{8,}"
    r"|\bsk-[A-Za-z0-9]{32,}"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
)

# Very short values would mask innocent text; real credentials are far longer.
_MIN_SECRET_LENGTH = 8

_lock = threading.Lock()
_secrets: tuple[str, ...] = ()


def _spellings(value: str) -> set[str]:
    """``value`` as messages may quote it: raw, trimmed, and escaped the way ``repr`` of a
    str or of its bytes and JSON write it (``http.client`` quotes a bad header as bytes)."""
    spellings = {value, value.strip(), repr(value)[1:-1], json.dumps(value)[1:-1]}
    spellings.add(repr(value.encode("utf-8", "backslashreplace"))[2:-1])
    return {s for s in spellings if len(s) >= _MIN_SECRET_LENGTH}


def register_secret(value: str) -> None:
    """Remember ``value`` so that :func:`redact` masks it wherever it appears, escaped too."""
    global _secrets
    if value in _secrets:
        return
    spellings = _spellings(value)
    if not spellings:
        return
    with _lock:
        # Longest first, so a spelling containing another is masked whole.
        _secrets = tuple(sorted(set(_secrets) | spellings, key=len, reverse=True))


def forget_secret(value: str) -> None:
    """Stop masking ``value``, a credential this process holds no more (a work item's token
    once its item is done): a long-running process would otherwise keep - and scan, in every
    :func:`redact` - one per item for its whole life. Another holder of the same value must
    register it again."""
    global _secrets
    spellings = _spellings(value)
    with _lock:
        _secrets = tuple(secret for secret in _secrets if secret not in spellings)


def redact(text: str) -> str:
    """Return ``text`` with every known secret and key-shaped token replaced by a mask."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    if "sk-" in text or "AKIA" in text or "ASIA" in text:
        text = _KEY_SHAPES.sub(MASK, text)
    return text


def redact_value(value: Any) -> Any:
    """Redact strings inside a JSON-like value (dicts, lists, tuples), leaving the rest."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(item) for item in value)
    return value


class Secret:
    """A credential that refuses to show itself.

    ``str()`` and ``repr()`` give a mask; :meth:`reveal` gives the value to the one place that
    must send it (an HTTP header, a signer).
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"a secret must be a str, not {type(value).__name__}")
        register_secret(value)
        self._value = value

    def reveal(self) -> str:
        """The raw value; call only where it is sent to its provider."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __reduce__(self) -> Any:
        raise TypeError("a Secret cannot be pickled")


class RedactingFilter(logging.Filter):
    """Masks secrets in log records of the loggers it is attached to."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


_FILTER = RedactingFilter()


def get_logger(name: str) -> logging.Logger:
    """A logger for one of our modules, with secret masking attached."""
    logger = logging.getLogger(name)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    return logger
