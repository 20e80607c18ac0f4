"""Provider-neutral loopback HTTP server that the emulators in this package are built on.

The emulators serve real HTTP on ``127.0.0.1`` (the OS picks the port) so that clients are
tested over true sockets: keep-alive, chunked bodies, a connection that ends mid-body or goes
silent all behave as they do on the network, which no mock of ``requests`` can reproduce.

This package owns everything that is not about one provider's API, one concept per module:

* :class:`Lifecycle` (``_lifecycle``) - the emulator's one lock, whether it is closing, and
  the threads it started;
* :class:`LoopbackServer` (``_server``) - serves a :class:`Service` on one port per listener,
  records every request and applies the request fault rules; closing is idempotent, ends open
  streams and joins every thread (with a bound, so a wedged thread cannot hang a test run);
  the listening server and its request handler are in ``_http``;
* :class:`Exchange` (``_exchange``) - one request and the two ways to answer it: a sized JSON
  body on a keep-alive connection, or a :class:`ChunkedStream` (``_streams``) whose chunks
  are written by hand so that faults can cut it anywhere;
* the fault rules (``_faults``): failing requests with an HTTP error, resetting their
  connections (before or after acting on them), and dropping, stalling, corrupting or
  duplicating the events of a stream (an event may be previewed by frames that go out ahead
  of it, and a drop may cut the connection in the middle of them);
* :func:`parse_form_data` (``_form``) - ``multipart/form-data`` bodies (file uploads), split
  exactly, binary parts included;
* what every API's routes need alike (``_routes``): a :class:`Router` (method and path
  pattern to route), :func:`query_value`, :func:`new_id` (ids with the API's prefixes) and
  :func:`utc_timestamp` (the ISO 8601 times the APIs write);
* :class:`LoopbackEmulator` (``_emulator``) - the base of every emulator: what they offer a
  test alike (requests, streams, request faults, waiting, closing); :class:`SseEmulator`
  (``_sse_emulator``) adds the stream faults of those that stream a session's log over SSE.

The kit an API is built from, so that an emulator is mostly its own data and wire shapes:
:class:`RoutedService` (``_service``: checks, routing, answers and the API's error shape),
:class:`Records` (``_collection``: resources by id, or the API's 404), :class:`PageTokens`
(``_paging``: pages behind opaque tokens, in the API's dialect) and :class:`LogStreams`
(``_log_stream``: a session's log streamed as it grows, in the API's frames).

An emulator builds its API on a :class:`Lifecycle` (whose lock guards the API's state too),
serves it with a :class:`LoopbackServer` and hands that to its :class:`LoopbackEmulator`.
Streams belong to a *scope* (for example a session id) so that stream faults and observations
can target one of several concurrent streams.
"""

from __future__ import annotations

from req_managed_agents.testing.server._collection import Records
from req_managed_agents.testing.server._emulator import LoopbackEmulator
from req_managed_agents.testing.server._exchange import Exchange
from req_managed_agents.testing.server._faults import RequestFault
from req_managed_agents.testing.server._form import FormPart, parse_form_data
from req_managed_agents.testing.server._lifecycle import Lifecycle
from req_managed_agents.testing.server._log_stream import LogStreams
from req_managed_agents.testing.server._paging import Page, PageTokens
from req_managed_agents.testing.server._records import RecordedRequest, StreamConnection
from req_managed_agents.testing.server._routes import (
    Route,
    Router,
    new_id,
    query_value,
    utc_timestamp,
)
from req_managed_agents.testing.server._server import LoopbackServer, Service
from req_managed_agents.testing.server._service import RoutedService
from req_managed_agents.testing.server._sse_emulator import SseEmulator
from req_managed_agents.testing.server._streams import ChunkedStream

__all__ = [
    "ChunkedStream",
    "Exchange",
    "FormPart",
    "Lifecycle",
    "LogStreams",
    "LoopbackEmulator",
    "LoopbackServer",
    "Page",
    "PageTokens",
    "RecordedRequest",
    "Records",
    "RequestFault",
    "Route",
    "RoutedService",
    "Router",
    "Service",
    "SseEmulator",
    "StreamConnection",
    "new_id",
    "parse_form_data",
    "query_value",
    "utc_timestamp",
]
