"""The core every runtime's control-plane client stands on: one authenticated, pooled HTTP
client, error parsing, checked JSON answers, paging, and a create that looks for what a lost
answer may have made before it is sent again.

What differs between the runtimes' APIs is data, an :class:`ApiDialect`: where an error
answer names its type, message and request id, where a page names the next, which header
carries the request id. Each runtime's ``api/_core.py`` configures an :class:`ApiCore` with
its own, adds how it authenticates and its retry policy, and keeps only what is its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar
from urllib.parse import quote

import requests

from req_managed_agents.errors import (
    APIError,
    IdleTimeoutError,
    MalformedResponseError,
    ManagedAgentsError,
    RateLimitError,
    ServerError,
    TransportError,
)
from req_managed_agents.transport._backoff import RetryPolicy, SendBudget, parse_retry_after, pause
from req_managed_agents.transport._http import HttpClient, api_error
from req_managed_agents.transport._json import check_fields, excerpt, json_object, loads, malformed

__all__ = [
    "MAX_METADATA_PAIRS",
    "ApiCore",
    "ApiDialect",
    "Json",
    "body_of",
    "checked_metadata",
    "id_value",
    "segment",
]

Json = dict[str, Any]
ErrorFacts = Callable[[Json, Mapping[str, str]], tuple[object, object, object]]
"""Where an error answer names its ``(type, message, request id)``, read from its JSON object
(``{}`` when it is none) and headers; what is not a string counts as not given."""
NextPage = Callable[[Json, list[Json]], "dict[str, Any] | None"]
"""The query changes that ask for the page after this one (a ``None`` value drops that
parameter), given the page and its items; None after the last page."""

# How much of an error body that is not JSON an APIError keeps.
_ERROR_BODY_EXCERPT = 2000
# The metadata limits of the Claude and OpenAI APIs (sessions, agents, vaults, ...).
MAX_METADATA_PAIRS = 16
_MAX_METADATA_KEY = 64
_MAX_METADATA_VALUE = 512
_T = TypeVar("_T")


@dataclass(frozen=True)
class ApiDialect:
    """How one runtime's API answers, where the runtimes differ."""

    error_facts: ErrorFacts
    next_page: NextPage
    request_id_header: str = "request-id"
    page_size: tuple[str, int] = ("limit", 100)  # the parameter, and the API's largest page
    throttling: frozenset[str] = frozenset()  # error types that are a rate limit, any status
    cut_deep: bool = False  # answers may nest deeper than Python's parser follows
    omits_empty_lists: bool = False  # a page may leave out its (empty) list


class ApiCore:
    """The authenticated, pooled HTTP client under every noun of a runtime's API; a runtime
    sets ``_dialect`` and authenticates each request in ``_authenticate``."""

    _dialect: ClassVar[ApiDialect]

    def __init__(
        self, base_url: str, *, timeout: float, retry: RetryPolicy, http: requests.Session | None
    ) -> None:
        self._http = self._plane(base_url, timeout, retry, http)

    def _plane(
        self, base_url: str, timeout: float, retry: RetryPolicy, http: requests.Session | None
    ) -> HttpClient:
        """A client of ``base_url`` with this API's errors and authentication (AgentCore
        has a second, over the first one's pool)."""
        return HttpClient(
            base_url,
            timeout=timeout,
            retry=retry,
            parse_error=self._error,
            authenticate=self._authenticate,
            session=http,
            request_id_header=self._dialect.request_id_header,
        )

    @property
    def base_url(self) -> str:
        """The API root every path is joined to."""
        return self._http.base_url

    @property
    def timeout(self) -> float:
        """Seconds a request may wait for each read."""
        return self._http.timeout

    def close(self) -> None:
        """Release pooled connections."""
        self._http.close()

    def _authenticate(self, request: requests.PreparedRequest) -> None:
        """Add the runtime's credentials to a request as it will be sent."""
        raise NotImplementedError

    def _error(self, response: requests.Response) -> APIError:
        """The error an answer names, read where the dialect says; a body that is not JSON
        is kept as an excerpt, and is the message when nothing better is."""
        try:
            body: Any = loads(response.content)
        except ValueError:
            body = excerpt(response.content, _ERROR_BODY_EXCERPT)
        facts = self._dialect.error_facts(body if isinstance(body, dict) else {}, response.headers)
        error_type, message, request_id = (
            fact if isinstance(fact, str) else None for fact in facts
        )
        if not message:
            text = body.strip() if isinstance(body, str) else ""
            message = text or response.reason or f"HTTP {response.status_code}"
        status, retry_after = response.status_code, parse_retry_after(response.headers)
        if error_type in self._dialect.throttling:  # AWS may throttle with a 400
            return RateLimitError(
                status, error_type, message, request_id, body=body, retry_after=retry_after
            )
        return api_error(
            status, error_type, message, request_id, body=body, retry_after=retry_after
        )

    def _json(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool,
        body: Any = None,
        data: bytes | None = None,
        files: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
        budget: SendBudget | None = None,
        deadline: float | None = None,
        cancelled: threading.Event | None = None,
        plane: HttpClient | None = None,
        cut_deep: bool = False,
        required: tuple[str, ...] = ("id",),
        listing: str | None = None,
        item_required: tuple[str, ...] = (),
        wrapped: str | None = None,
    ) -> Json:
        """The JSON object a request answers, checked (``transport._json.json_object``):
        a resource's answer must carry its ``id`` (``required=()`` for the others); a
        ``listing`` member (``data``), when present, must be a list of objects, each with
        the ``item_required`` fields. With ``wrapped``, the object the answer wraps under
        that name (``{"harness": {...}}``) is returned, its ``required`` fields not empty.
        ``body`` is sent as JSON, ``data`` as the bytes given, ``files`` as a multipart form
        (to ``plane``, or this API). A retry's wait ends when ``cancelled`` is set."""
        http = plane or self._http
        response = http.request(
            method,
            path,
            idempotent=idempotent,
            json=body,
            data=data,
            files=files,
            params=params,
            headers=headers,
            telemetry_metadata=telemetry_metadata,
            budget=budget,
            deadline=deadline,
            cancelled=cancelled,
        )
        what = f"{method} {path}"
        answer = json_object(
            response,
            what,
            request_id_header=http.request_id_header,
            cut_deep=cut_deep or self._dialect.cut_deep,
            required=() if wrapped else required,
            listing=listing,
            item_required=item_required,
        )
        if wrapped is None:
            return answer
        try:
            inner = check_fields(answer.get(wrapped), wrapped, required=required)
            empty = [field for field in required if not inner[field]]
            if empty:
                raise ValueError(f"{wrapped}.{empty[0]} is empty")
        except ValueError as exc:
            request_id = response.headers.get(http.request_id_header)
            raise malformed(response.status_code, what, str(exc), request_id) from None
        return inner

    def _get(self, path: str, **options: Any) -> Json:
        """``GET`` one object (a read: retried)."""
        return self._json("GET", path, idempotent=True, **options)

    def _delete(self, path: str, **options: Any) -> Json:
        """``DELETE`` one (retried: deleting twice leaves the same state)."""
        return self._json("DELETE", path, idempotent=True, **options)

    def _pages(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        member: str = "data",
        headers: Mapping[str, str] | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
        cut_deep: bool = False,
        item_required: tuple[str, ...] = ("id",),
        cancelled: threading.Event | None = None,
    ) -> Iterator[Json]:
        """A list's items, a page at a time, to the last page (stop iterating and no further
        page is asked for); every item must carry the ``item_required`` fields. A cursor
        seen before ends the list: a server repeating one would otherwise loop forever.
        Once ``cancelled`` is set, a retry's wait ends and no further page is asked for
        (:class:`TransportError`)."""
        size_parameter, size = self._dialect.page_size
        query: dict[str, Any] = {size_parameter: size, **(params or {})}
        seen: set[tuple[tuple[str, Any], ...]] = set()
        while True:
            if seen and cancelled is not None and cancelled.is_set():
                raise TransportError(f"GET {path}: cancelled before its next page", not_sent=True)
            page = self._json(
                "GET",
                path,
                idempotent=True,
                params=query,
                headers=headers,
                telemetry_metadata=telemetry_metadata,
                cancelled=cancelled,
                cut_deep=cut_deep,
                required=() if self._dialect.omits_empty_lists else (member,),
                listing=member,
                item_required=item_required,
            )
            items: list[Json] = page.get(member) or []  # objects, each checked
            yield from items
            changes = self._dialect.next_page(page, items)
            if changes is None or tuple(changes.items()) in seen:
                return
            seen.add(tuple(changes.items()))
            query = {key: value for key, value in {**query, **changes}.items() if value is not None}

    def _list(
        self, path: str, params: Mapping[str, Any] | None = None, **options: Any
    ) -> list[Json]:
        """Every item of a list (:meth:`_pages`)."""
        return list(self._pages(path, params, **options))

    def _create_or_find(
        self,
        send: Callable[[], _T],
        find: Callable[[], Json | None] | None,
        cancelled: threading.Event | None = None,
    ) -> _T | Json:
        """Send a create whose request carries a token that what it makes keeps, and that
        ``find`` looks for (None: it carries none, and nothing can be looked for).

        A create whose answer was lost (a reset, a timeout, a 5xx, a bare 429) may have made
        it: it is looked for - after the policy's pause, lest a slow server still making it
        be missed and a second one made - before the create is sent again; so it is after an
        answer that cannot be used (the :class:`MalformedResponseError` is raised when
        nothing is found). A refusal the HTTP layer gave up on proves nothing was made."""
        attempt = 0
        while True:
            try:
                return send()
            except MalformedResponseError as unusable:
                if find is None:
                    raise
                try:
                    made = find()
                except ManagedAgentsError as exc:
                    raise unusable from exc
                if made is None:
                    raise
                return made
            except (TransportError, ServerError, RateLimitError, IdleTimeoutError) as exc:
                refused = isinstance(exc, APIError) and exc.retry_after is not None
                if find is None or refused or attempt >= self._http.retry.max_retries:
                    raise
                if not (isinstance(exc, TransportError) and exc.not_sent):
                    if not pause(self._http.retry.delay(attempt), cancelled):
                        raise
                    made = find()
                    if made is not None:
                        return made
                attempt += 1


def segment(value: str) -> str:
    """One path segment; an id can never escape into another path."""
    if not isinstance(value, str) or not value or value in (".", ".."):
        # requests collapses dot segments (even percent-encoded ones) into another path.
        raise ValueError(f"an id must be a non-empty string other than '.' or '..', got {value!r}")
    return quote(value, safe="")


def id_value(field: str, value: object) -> str:
    """``value``, if it is a non-empty string."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{field} must be a non-empty string, got {value!r}")
    return value


def checked_metadata(metadata: object, *, patch: bool = False) -> dict[str, Any]:
    """String keys and values within the APIs' limits (16 pairs, 64- and 512-char caps); in
    a ``patch``, a value of None deletes its key."""
    if not isinstance(metadata, Mapping):
        raise ValueError(f"metadata must be a mapping, got {type(metadata).__name__}")
    if len(metadata) > MAX_METADATA_PAIRS:
        raise ValueError(f"metadata holds at most {MAX_METADATA_PAIRS} pairs, got {len(metadata)}")
    for key, value in metadata.items():
        if not isinstance(key, str) or not 1 <= len(key) <= _MAX_METADATA_KEY:
            raise ValueError(
                f"metadata keys must be strings of 1 to {_MAX_METADATA_KEY} characters, got {key!r}"
            )
        if value is None and patch:
            continue
        if not isinstance(value, str):
            raise ValueError(f"metadata[{key!r}] must be a string, got {type(value).__name__}")
        if len(value) > _MAX_METADATA_VALUE:
            raise ValueError(
                f"metadata[{key!r}] is {len(value)} characters long; "
                f"the API allows at most {_MAX_METADATA_VALUE}"
            )
    return dict(metadata)


def body_of(body: Mapping[str, Any] | None, fields: Mapping[str, Any]) -> Json:
    """A request body given as a mapping, as keywords, or both (a keyword names a field the
    mapping does not: giving one twice is refused)."""
    if body is not None and not isinstance(body, Mapping):
        raise TypeError(f"the body must be a mapping, got {type(body).__name__}")
    merged = dict(body or {})
    twice = sorted(set(merged) & set(fields))
    if twice:
        raise ValueError(f"{', '.join(twice)} given both in the body and as keywords")
    merged.update(fields)
    return merged
