"""The HTTP layer every provider shares: one pooled ``requests.Session``, timeouts on every
call, the retry policy, error mapping and request telemetry.

Providers plug in what differs: how to read an error body, how to authenticate a prepared
request (a static header for Anthropic, a SigV4 signature over the exact bytes for AWS) and
which header carries the service's request id.

A body that is not streamed is read no further than a limit (:mod:`._bodies`), so that no
answer can take the process's memory.
"""

from __future__ import annotations

import contextlib
import http.client
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from http.cookiejar import DefaultCookiePolicy
from typing import Any, cast

import requests
import requests.adapters
import urllib3.exceptions
import urllib3.response

from req_managed_agents import telemetry
from req_managed_agents._redact import get_logger, redact
from req_managed_agents.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    IdleTimeoutError,
    ManagedAgentsError,
    NotFoundError,
    RateLimitError,
    ServerError,
    StreamError,
    TransportError,
)
from req_managed_agents.transport._backoff import (
    RetryPolicy,
    SendBudget,
    parse_retry_after,
    parse_should_retry,
    pause,
)
from req_managed_agents.transport._bodies import ERROR_BODY_BYTES, read_body, too_long
from req_managed_agents.transport._json import MAX_BODY_BYTES

__all__ = ["HttpClient", "api_error", "read_chunks", "shutdown_response"]

_log = get_logger(__name__)

# A connect timeout longer than this only delays the inevitable on a dead host.
_MAX_CONNECT_TIMEOUT = 10.0
# Connections kept per host. Every live session holds one for its stream and borrows more
# for posts, so requests' default of 10 overflows (and logs "Connection pool is full") at a
# handful of concurrent sessions, as in a web server; a bigger pool costs nothing unused.
POOL_SIZE = 64
_STREAM_READ_SIZE = 64 * 1024

# Control characters in a header value: http.client refuses most, and no credential holds one.
_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")

ErrorParser = Callable[[requests.Response], APIError]
Authenticator = Callable[[requests.PreparedRequest], None]


def api_error(
    status: int,
    error_type: str | None,
    message: str,
    request_id: str | None,
    *,
    body: Any = None,
    retry_after: float | None = None,
) -> APIError:
    """The :class:`APIError` subclass that names what an HTTP status means."""
    error_class: type[APIError]
    if status == 429:
        error_class = RateLimitError
    elif status in (400, 413, 422):
        error_class = BadRequestError
    elif status in (401, 403):
        error_class = AuthenticationError
    elif status == 404:
        error_class = NotFoundError
    elif status == 409:
        error_class = ConflictError
    elif status >= 500:
        error_class = ServerError
    else:
        error_class = APIError
    return error_class(status, error_type, message, request_id, body=body, retry_after=retry_after)


def _proves_not_sent(exc: requests.RequestException) -> bool:
    """A connection that never opened cannot have delivered the request."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    reason = exc.args[0] if exc.args else None
    inner = getattr(reason, "reason", reason)
    return isinstance(inner, urllib3.exceptions.NewConnectionError)


class HttpClient:
    """A base URL plus the policies for talking to it; safe to share between threads.

    Cookies are refused so that the shared ``requests.Session`` holds no per-request state.
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float,
        retry: RetryPolicy,
        parse_error: ErrorParser,
        authenticate: Authenticator,
        session: requests.Session | None = None,
        request_id_header: str = "request-id",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retry = retry
        self.request_id_header = request_id_header
        self._parse_error = parse_error
        self._authenticate = authenticate
        self._owns_session = session is None
        self.session = session if session is not None else _pooled_session()
        self.session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))

    def close(self) -> None:
        """Release pooled connections (only when this client created the session).

        Each pool is closed explicitly: urllib3 2 forgets its pools on ``clear()`` without
        closing their idle keep-alive sockets, which then linger until garbage collection.
        """
        if not self._owns_session:
            return
        for adapter in self.session.adapters.values():
            managers = [getattr(adapter, "poolmanager", None)]
            managers += list(getattr(adapter, "proxy_manager", {}).values())
            for manager in managers:
                pools: Any = getattr(manager, "pools", None)
                for key in list(pools.keys()) if pools is not None else ():
                    pool = pools.get(key)
                    if pool is not None:
                        pool.close()
        self.session.close()

    def _prepare(self, request: requests.Request) -> requests.PreparedRequest:
        """The request as it will be sent, authenticated; header values that would break it
        are refused with an error that names the header and quotes no value."""
        try:
            prepared = self.session.prepare_request(request)
        except requests.exceptions.InvalidHeader:
            raise ConfigurationError(
                f"{request.method} {request.url}: a header holds whitespace or control characters"
            ) from None
        self._authenticate(prepared)
        _check_header_values(prepared)
        return prepared

    def _environment_settings(
        self, prepared: requests.PreparedRequest, stream: bool
    ) -> dict[str, Any]:
        """Proxies, CA bundle and client certificate as ``requests.get`` would use them:
        ``HTTPS_PROXY``/``NO_PROXY``, ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE``, merged with
        the session's own settings (``.netrc`` is not read: authentication is ours)."""
        settings = self.session.merge_environment_settings(prepared.url, {}, stream, None, None)
        return dict(settings)

    def timeouts(self, read: float | None = None) -> tuple[float, float]:
        """``(connect, read)`` seconds for one request; ``read`` bounds each socket read."""
        read_timeout = self.timeout if read is None else read
        return (min(_MAX_CONNECT_TIMEOUT, self.timeout, read_timeout), read_timeout)

    def request(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        data: bytes | None = None,
        files: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        stream: bool = False,
        read_timeout: float | None = None,
        cancelled: threading.Event | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        deadline: float | None = None,
        budget: SendBudget | None = None,
        max_body: int | None = MAX_BODY_BYTES,
    ) -> requests.Response:
        """Send one request, retrying per the policy; return a 2xx response or raise.

        Raises :class:`APIError` subclasses for error statuses and :class:`TransportError`
        when no response arrived. A retry wait ends early when ``cancelled`` is set.
        ``retry`` overrides the client's policy for this request; ``deadline`` (a
        :func:`time.monotonic` time) caps every socket wait and forbids a retry that could
        not finish before it; every send, retries included, spends one of ``budget``'s (an
        input's, shared with the loops above that resend it). Unless ``stream``, the body is
        read before this returns, up to ``max_body`` bytes (None: all of it, for a file
        download): a longer one is a :class:`MalformedResponseError`.
        """
        policy = retry or self.retry
        url = self.base_url + path
        if stream:
            # Streams are decoded as they arrive: compression would hide the frames.
            headers = {"accept-encoding": "identity", **(headers or {})}
        request = requests.Request(
            method,
            url,
            params=params,
            json=json,
            data=data,
            files=files,
            headers=headers,
            auth=_own_auth,  # never .netrc's: the provider authenticates below
        )
        attempt = 0
        while True:
            if budget is not None and not budget.spend():
                raise TransportError(
                    f"{method} {path}: its send budget ({budget.sends}) is spent", not_sent=True
                )
            prepared = self._prepare(request)
            meta = {
                **(telemetry_metadata or {}),
                "method": method,
                "path": path,
                "attempt": attempt,
            }
            timeout = read_timeout
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TransportError(f"{method} {path}: no time left in the caller's budget")
                timeout = min(timeout if timeout is not None else self.timeout, left)
            retry_after: float | None = None
            failure: ManagedAgentsError
            with telemetry.span("request", meta) as outcome:
                try:
                    # Always streamed, so that the body is read here, no further than a limit.
                    response = self.session.send(
                        prepared,
                        timeout=self.timeouts(timeout),
                        allow_redirects=False,
                        **self._environment_settings(prepared, stream=True),
                    )
                    if not stream:
                        failed = response.status_code >= 300
                        limit = ERROR_BODY_BYTES if failed else max_body
                        if not read_body(response, limit) and not failed:
                            outcome["status"] = response.status_code
                            what = f"{method} {path}"
                            raise too_long(response, what, limit, self.request_id_header)
                except requests.RequestException as exc:
                    failure = _transport_failure(method, path, exc, stream, timeout or self.timeout)
                    failure.__cause__ = exc
                    outcome["status"] = None
                    if not _may_retry_transport(policy, exc, idempotent, attempt) or not (
                        budget is None or budget.left
                    ):
                        raise failure from exc
                except (ValueError, OSError) as exc:
                    # Raised before anything was sent (a CA bundle path that does not exist, a
                    # header value http.client refuses): retrying cannot help. The message may
                    # quote a credential in escaped form, so the original is not chained.
                    outcome["status"] = None
                    raise TransportError(f"{method} {path} failed: {redact(str(exc))}") from None
                else:
                    outcome["status"] = response.status_code
                    _log.debug(
                        "%s %s -> %s (attempt %d)", method, path, response.status_code, attempt
                    )
                    if response.status_code < 300:
                        return response
                    api_failure = self._parse_error(response)
                    response.close()
                    retry_after = parse_retry_after(response.headers)
                    retrying = attempt < policy.max_retries and (budget is None or budget.left)
                    retrying = retrying and policy.should_retry(
                        api_failure.status_code,
                        api_failure.error_type,
                        idempotent=idempotent,
                        retry_after=retry_after,
                        server_says=parse_should_retry(response.headers),
                    )
                    if not retrying:
                        raise api_failure
                    failure = api_failure
            delay = policy.delay(attempt, retry_after)
            if deadline is not None and time.monotonic() + delay >= deadline:
                raise failure
            _log.info("retrying %s %s in %.2f s after: %s", method, path, delay, failure)
            if not pause(delay, cancelled):
                raise TransportError(f"{method} {path} cancelled while waiting to retry")
            attempt += 1


def _pooled_session() -> requests.Session:
    session = requests.Session()
    adapter = requests.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=POOL_SIZE)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


def _own_auth(request: requests.PreparedRequest) -> requests.PreparedRequest:
    """An ``auth`` that adds nothing: with it, ``requests`` does not look in ``.netrc`` and
    send a stranger's credentials (the provider's own authentication is added after)."""
    return request


def _check_header_values(prepared: requests.PreparedRequest) -> None:
    """Refuse a header value ``http.client`` would refuse, before it can quote it back.

    The usual cause is a credential pasted with a trailing newline; the error names the
    header, never the value.
    """
    for name, value in prepared.headers.items():
        raw = cast(object, value)  # the stubs say str; callers may pass bytes
        text = raw.decode("latin-1") if isinstance(raw, bytes) else str(raw)
        if text != text.strip() or _CONTROL_CHARACTER.search(text):
            raise ConfigurationError(
                f"the {name} header holds whitespace or control characters at its ends or "
                "inside; check the credential or setting it comes from"
            )


def _transport_failure(
    method: str, path: str, exc: requests.RequestException, stream: bool, timeout: float
) -> ManagedAgentsError:
    """No response: for a stream, silence before the first byte is an idle timeout too."""
    if stream and isinstance(exc, requests.exceptions.ReadTimeout):
        return IdleTimeoutError(
            f"{method} {path}: no response within {timeout:g} s", idle_timeout=timeout
        )
    return TransportError(
        f"{method} {path} failed: {redact(str(exc))}", not_sent=_proves_not_sent(exc)
    )


def _may_retry_transport(
    policy: RetryPolicy, exc: requests.RequestException, idempotent: bool, attempt: int
) -> bool:
    if attempt >= policy.max_retries:
        return False
    return idempotent or _proves_not_sent(exc)


def _reader(raw: Any) -> Callable[[int], bytes]:
    """The call that returns whatever bytes have arrived, without waiting for a full buffer.

    urllib3 2 has ``read1`` (and decodes compressed bodies itself); urllib3 1.26, which
    botocore still pins on older Pythons, does not, but the ``http.client`` response under
    it does, chunked transfer included. A stand-in transport's raw file is read as it is.
    """
    read1 = getattr(raw, "read1", None)
    if read1 is not None:
        if isinstance(raw, urllib3.response.HTTPResponse):
            return lambda size: bytes(read1(size, decode_content=True))
        return lambda size: bytes(read1(size))
    http_response = getattr(raw, "_fp", None)
    if http_response is not None and hasattr(http_response, "read1"):
        return lambda size: bytes(http_response.read1(size))
    return lambda size: bytes(raw.read(size))


def read_chunks(response: requests.Response, idle_timeout: float) -> Iterator[bytes]:
    """Yield body bytes as soon as each piece arrives.

    Each read returns whatever the socket has (``iter_content`` would wait for a full
    buffer and stall a slow stream). The socket's read timeout, set to ``idle_timeout`` when
    the request was sent, bounds the wait for each piece, which is exactly an inter-chunk
    idle timeout.
    """
    read = _reader(response.raw)
    try:
        while True:
            chunk = read(_STREAM_READ_SIZE)
            if not chunk:
                return
            yield chunk
    except (urllib3.exceptions.ReadTimeoutError, TimeoutError) as exc:
        raise IdleTimeoutError(
            f"no data for {idle_timeout:g} s on {response.request.path_url.split('?')[0]}",
            idle_timeout=idle_timeout,
        ) from exc
    except (
        urllib3.exceptions.HTTPError,
        http.client.HTTPException,
        OSError,
        ValueError,
        AttributeError,
    ) as exc:
        raise StreamError(f"stream broke: {redact(str(exc)) or type(exc).__name__}") from exc


def shutdown_response(response: requests.Response) -> None:
    """Wake a reader blocked on a streaming response, from any thread.

    Closing a socket does not wake a thread blocked in ``recv``; shutting it down does. The
    response is not closed here: closing releases its connection to the pool, and doing that
    from this thread would race the reader's own release (the same connection queued twice,
    later handed to two requests at once) or give the socket away while the reader still
    reads it. The reader wakes to a broken stream and closes the response itself.
    """
    raw = response.raw
    with contextlib.suppress(AttributeError, RuntimeError, ValueError, OSError):
        shutdown = getattr(raw, "shutdown", None)
        if shutdown is not None:
            shutdown()
        else:  # urllib3 1.26: reach the socket itself
            sock: Any = getattr(getattr(raw, "_connection", None), "sock", None)
            if sock is None:
                sock = getattr(getattr(getattr(raw, "_fp", None), "fp", None), "raw", None)
                sock = getattr(sock, "_sock", None)
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
