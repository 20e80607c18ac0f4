"""The work queue routes of self-hosted environments: ``/v1/environments/{id}/work...``.

``GET .../work/poll`` long-polls up to ``block_ms`` (1-999; absent: no wait) and answers
the oldest item a poll may take, with its ``secret``, or JSON ``null``; an
``Anthropic-Worker-ID`` header counts its worker in the statistics for 30 seconds.
``POST .../work/{id}/ack``, ``/heartbeat`` (``expected_last_heartbeat`` and
``desired_ttl_seconds`` in the query) and ``/stop`` (``{"force": bool}``) move an item
through its states (``_work_items``); ``GET``/``POST .../work/{id}`` read it and merge its
metadata (a null value deletes a key); ``GET .../work`` lists the environment's items newest
first, in pages; ``GET .../work/stats`` counts the queue. Only a poll's answer carries an
item's secret. The environment must be self-hosted (a 400 otherwise); who may call each
route is ``_work_auth``'s to say, before the route runs.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._wire import (
    ID,
    _invalid,
    _json_object,
    _merged_metadata,
    _query_int,
    _reject_unknown,
)
from req_managed_agents.testing.claude._work_items import DEFAULT_RECLAIM_MS, secret_of
from req_managed_agents.testing.server import new_id, query_value

if TYPE_CHECKING:
    from req_managed_agents.testing.claude._state import ClaudeState
    from req_managed_agents.testing.claude._work_items import WorkItems
    from req_managed_agents.testing.server import Exchange, Lifecycle, RecordedRequest, Route

WORK_PATH = f"/v1/environments/{ID}/work"
# The longest a poll may wait (ms), and how often a waiting poll looks again (s).
MAX_BLOCK_MS = 999
_POLL_SLICE = 0.05
# How long a worker that polled counts as polling.
_WORKER_WINDOW = 30.0


def _block_ms(request: RecordedRequest) -> int:
    value = _query_int(request, "block_ms")
    if value is not None and value > MAX_BLOCK_MS:
        raise _invalid(f"block_ms: Input should be from 1 to {MAX_BLOCK_MS}, not {value}")
    return value or 0


class WorkQueue:
    """The work routes: the items of ``_work_items`` over HTTP."""

    def __init__(self, lifecycle: Lifecycle, state: ClaudeState, items: WorkItems) -> None:
        self._lifecycle = lifecycle
        self._state = state
        self._items = items

    def routes(self) -> list[Route]:
        item = f"{WORK_PATH}/{ID}"
        return [  # poll and stats before the item routes, whose id they would match
            ("GET", f"{WORK_PATH}/poll", self._poll),
            ("GET", f"{WORK_PATH}/stats", self._stats),
            ("GET", WORK_PATH, self._list),
            ("POST", f"{item}/ack", self._ack),
            ("POST", f"{item}/heartbeat", self._heartbeat),
            ("POST", f"{item}/stop", self._stop),
            ("GET", item, self._retrieve),
            ("POST", item, self._update),
        ]

    def _self_hosted(self, environment_id: str) -> None:
        environment = self._state.environments.find(environment_id)
        if environment["config"]["type"] != "self_hosted":
            raise _invalid(f"environment {environment_id!r} is not self_hosted; it has no work")

    def _poll(self, exchange: Exchange, environment_id: str) -> None:
        request = exchange.request
        block_ms = _block_ms(request)
        reclaim_ms = _query_int(request, "reclaim_older_than_ms") or DEFAULT_RECLAIM_MS
        worker = request.headers.get("anthropic-worker-id")
        deadline = time.monotonic() + block_ms / 1000
        condition = self._state.condition
        with condition:
            self._self_hosted(environment_id)
            if worker:
                self._state.workers_polling.setdefault(environment_id, {})[worker] = (
                    time.monotonic()
                )
            answer: dict[str, Any] | None = None
            while True:
                item = self._items.hand_out(environment_id, reclaim_ms / 1000)
                if item is not None and item.token is not None:
                    answer = {**item.view(), "secret": secret_of(item.token)}
                    break
                left = deadline - time.monotonic()
                if left <= 0 or self._lifecycle.stopping:
                    break
                condition.wait(min(left, _POLL_SLICE))  # leases may run out meanwhile
        exchange.respond_json(200, answer, {"request-id": new_id("req")})

    def _ack(self, exchange: Exchange, environment_id: str, work_id: str) -> dict[str, Any]:
        _reject_unknown(_json_object(exchange.request, optional=True), frozenset())
        with self._state.condition:
            self._self_hosted(environment_id)
            item = self._items.item(environment_id, work_id)
            self._items.ack(item)
            return item.view()

    def _heartbeat(self, exchange: Exchange, environment_id: str, work_id: str) -> dict[str, Any]:
        request = exchange.request
        _reject_unknown(_json_object(request, optional=True), frozenset())
        expected = query_value(request, "expected_last_heartbeat")
        desired = _query_int(request, "desired_ttl_seconds")
        with self._state.condition:
            self._self_hosted(environment_id)
            item = self._items.item(environment_id, work_id)
            return self._items.heartbeat(item, expected, desired)

    def _stop(self, exchange: Exchange, environment_id: str, work_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request, optional=True)
        _reject_unknown(body, frozenset({"force"}))
        force = body.get("force", False)
        if not isinstance(force, bool):
            raise _invalid("force: Input should be a valid boolean")
        with self._state.condition:
            self._self_hosted(environment_id)
            item = self._items.item(environment_id, work_id)
            self._items.stop(item, force)
            return item.view()

    def _retrieve(self, exchange: Exchange, environment_id: str, work_id: str) -> dict[str, Any]:
        with self._state.condition:
            self._self_hosted(environment_id)
            return self._items.item(environment_id, work_id).view()

    def _update(self, exchange: Exchange, environment_id: str, work_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, frozenset({"metadata"}))
        if "metadata" not in body:
            raise _invalid("metadata: Field required")
        with self._state.condition:
            self._self_hosted(environment_id)
            item = self._items.item(environment_id, work_id)
            item.record["metadata"] = _merged_metadata(item.record["metadata"], body["metadata"])
            return item.view()

    def _list(self, exchange: Exchange, environment_id: str) -> dict[str, Any]:
        with self._state.condition:
            self._self_hosted(environment_id)
            items = reversed(self._items.of_environment(environment_id))  # newest first
            return self._state.page(
                exchange.request,
                [item.view() for item in items],
            )

    def _stats(self, exchange: Exchange, environment_id: str) -> dict[str, Any]:
        with self._state.condition:
            self._self_hosted(environment_id)
            queued = [i for i in self._items.of_environment(environment_id) if i.state == "queued"]
            now = time.monotonic()
            polls = self._state.workers_polling.get(environment_id, {})
            return {
                "type": "work_queue_stats",
                "depth": sum(i.polled_at is None for i in queued),
                "pending": sum(i.polled_at is not None for i in queued),
                "oldest_queued_at": min((i.record["created_at"] for i in queued), default=None),
                "workers_polling": sum(now - at < _WORKER_WINDOW for at in polls.values()),
            }
