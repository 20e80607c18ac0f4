"""Telemetry: dotted events with measurements and metadata, for whoever subscribes.

::

    from req_managed_agents import telemetry

    def log_event(name, measurements, metadata):
        print(name, measurements, metadata)

    detach = telemetry.attach(log_event)                     # everything
    telemetry.attach(log_event, prefix="req_managed_agents.tool")   # only tool events
    detach()

Events (all prefixed ``req_managed_agents.``):

=============================  ====================================================
``request.start/stop/exception``  one HTTP request (``method``, ``path``, ``status``)
``stream.connected/event/done/error``  the provider's event stream
``tool.start/stop/exception``  one local tool call (``tool``, ``is_error``)
``session.start/turn/stop``    a driven session and each of its turns
``worker.item.start/stop``     a self-hosted worker's work item (``outcome``)
``worker.lease_lost``          a work item another worker may now hold
=============================  ====================================================

``*.stop`` and ``*.exception`` carry ``measurements["duration"]`` in seconds. Callers add
their own tags with ``telemetry_metadata=`` on the drivers; library keys win on a clash.
A callback that raises is logged and detached so it can never break a session. With no
subscriber, emitting costs one attribute check. Metadata never contains a credential:
strings pass through the secret redactor before any callback sees them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from req_managed_agents._redact import get_logger, redact_value

__all__ = ["PREFIX", "Callback", "Detach", "attach", "emit", "enabled", "merge_metadata", "span"]

PREFIX = "req_managed_agents"

Callback = Callable[[str, dict[str, Any], dict[str, Any]], None]

_log = get_logger(__name__)
_lock = threading.Lock()
# Replaced wholesale under the lock, read without it: emitters never block on subscribers.
_subscribers: tuple[tuple[str, Callback], ...] = ()


class Detach:
    """Handle returned by :func:`attach`; call it (or leave its ``with`` block) to detach.
    ``undo`` is what detaching does (a bridge adds its own undoing to a subscription's)."""

    def __init__(self, undo: Callable[[], None]) -> None:
        self._undo = undo

    def __call__(self) -> None:
        self._undo()

    def __enter__(self) -> Detach:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self()


def attach(callback: Callback, prefix: str = PREFIX) -> Detach:
    """Call ``callback(name, measurements, metadata)`` for every event under ``prefix``."""
    if not callable(callback):
        raise TypeError("telemetry callback must be callable")
    global _subscribers
    entry = (prefix.rstrip("."), callback)
    with _lock:
        _subscribers = (*_subscribers, entry)
    return Detach(lambda: _remove(entry))


def _remove(entry: tuple[str, Callback]) -> None:
    global _subscribers
    with _lock:
        _subscribers = tuple(e for e in _subscribers if e is not entry)


def enabled() -> bool:
    """Whether anyone listens; lets callers skip building costly metadata."""
    return bool(_subscribers)


def emit(
    event: str,
    measurements: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """Send ``req_managed_agents.<event>`` to every matching subscriber."""
    subscribers = _subscribers
    if not subscribers:
        return
    name = f"{PREFIX}.{event}"
    clean = redact_value(dict(metadata or {}))
    for entry in subscribers:
        prefix, callback = entry
        if name != prefix and not name.startswith(prefix + "."):
            continue
        try:
            callback(name, dict(measurements or {}), dict(clean))
        except Exception:
            _log.warning(
                "telemetry callback %r raised on %s and was detached", callback, name, exc_info=True
            )
            _remove(entry)


@contextmanager
def span(event: str, metadata: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Emit ``<event>.start``, then ``.stop`` or ``.exception`` with the duration.

    The yielded dict is merged into the stop metadata, so the body can report results
    (a status code, ``is_error``) it only learns at the end.
    """
    base = dict(metadata or {})
    extra: dict[str, Any] = {}
    if not _subscribers:
        yield extra
        return
    started = time.monotonic()
    emit(f"{event}.start", {"system_time": time.time()}, base)
    try:
        yield extra
    except BaseException as exc:
        emit(
            f"{event}.exception",
            {"duration": time.monotonic() - started},
            {**base, **extra, "kind": type(exc).__name__, "reason": str(exc)},
        )
        raise
    emit(f"{event}.stop", {"duration": time.monotonic() - started}, {**base, **extra})


def merge_metadata(caller: Mapping[str, Any] | None, library: Mapping[str, Any]) -> dict[str, Any]:
    """Caller tags plus library keys; the library's value wins on a clash."""
    return {**(caller or {}), **library}
