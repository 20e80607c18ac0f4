from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from req_managed_agents import telemetry

Event = tuple[str, dict[str, Any], dict[str, Any]]


@pytest.fixture
def events() -> Iterator[list[Event]]:
    seen: list[Event] = []
    detach = telemetry.attach(lambda n, m, md: seen.append((n, m, md)))
    yield seen
    detach()


def test_events_carry_dotted_names_measurements_and_metadata(events: list[Event]) -> None:
    telemetry.emit("stream.event", {"count": 1}, {"type": "agent.message"})
    assert events == [("req_managed_agents.stream.event", {"count": 1}, {"type": "agent.message"})]


def test_prefix_selects_a_subtree_on_dot_boundaries() -> None:
    seen: list[str] = []
    with telemetry.attach(lambda n, m, md: seen.append(n), prefix="req_managed_agents.tool"):
        telemetry.emit("tool.start", {}, {})
        telemetry.emit("tools_other.start", {}, {})
        telemetry.emit("request.start", {}, {})
    assert seen == ["req_managed_agents.tool.start"]


def test_detach_stops_delivery_and_is_idempotent(events: list[Event]) -> None:
    other: list[str] = []
    detach = telemetry.attach(lambda n, m, md: other.append(n))
    detach()
    detach()
    telemetry.emit("session.start", {}, {})
    assert other == []
    assert len(events) == 1


def test_span_emits_start_and_stop_with_duration_and_late_metadata(events: list[Event]) -> None:
    with telemetry.span("request", {"method": "GET"}) as extra:
        extra["status"] = 200
    names = [name for name, _, _ in events]
    assert names == ["req_managed_agents.request.start", "req_managed_agents.request.stop"]
    _, measurements, metadata = events[1]
    assert measurements["duration"] >= 0
    assert metadata == {"method": "GET", "status": 200}


def test_span_emits_exception_and_reraises(events: list[Event]) -> None:
    with pytest.raises(KeyError), telemetry.span("tool", {"tool": "t"}):
        raise KeyError("gone")
    name, measurements, metadata = events[-1]
    assert name == "req_managed_agents.tool.exception"
    assert metadata["kind"] == "KeyError"
    assert "duration" in measurements


def test_a_raising_callback_is_logged_and_detached(
    events: list[Event], caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []

    def broken(name: str, measurements: dict[str, Any], metadata: dict[str, Any]) -> None:
        calls.append(name)
        raise RuntimeError("subscriber bug")

    telemetry.attach(broken)
    with caplog.at_level(logging.WARNING, logger="req_managed_agents.telemetry"):
        telemetry.emit("session.start", {}, {})
        telemetry.emit("session.stop", {}, {})
    assert calls == ["req_managed_agents.session.start"]
    assert len(events) == 2, "other subscribers keep receiving"
    assert "detached" in caplog.text


def test_subscribers_cannot_mutate_what_others_see() -> None:
    seen: list[dict[str, Any]] = []

    def mutate(name: str, measurements: dict[str, Any], metadata: dict[str, Any]) -> None:
        metadata["tool"] = "changed"

    with telemetry.attach(mutate), telemetry.attach(lambda n, m, md: seen.append(md)):
        telemetry.emit("tool.start", {}, {"tool": "t"})
    assert seen == [{"tool": "t"}]


def test_caller_metadata_merges_and_library_keys_win() -> None:
    merged = telemetry.merge_metadata({"tenant": "a", "tool": "caller"}, {"tool": "library"})
    assert merged == {"tenant": "a", "tool": "library"}


def test_enabled_reflects_subscribers() -> None:
    assert not telemetry.enabled()
    with telemetry.attach(lambda n, m, md: None):
        assert telemetry.enabled()
    assert not telemetry.enabled()
