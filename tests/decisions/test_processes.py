"""Decisions across processes: one process's run stops for a person and exits, another
answers it; answers killed at every point between the claim and the session's next stop are
retried; and two processes answering one token at once get one winner. Side effects are
counted in files, and what reached the provider in the emulator's own record."""

from __future__ import annotations

import json
import multiprocessing
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.testing import ToolCall, Turn, call
from tests.decisions.child import Refunds, provider_of, store_of
from tests.emulated import BY_NAME, RUNTIMES, Runtime

ROOT = Path(__file__).resolve().parents[2]
CHILD_TIMEOUT = 120.0


def _recipe(runtime: Runtime, emulator: Any) -> dict[str, Any]:
    """How a child process builds a provider for ``emulator`` (as its ``provider()`` does)."""
    if runtime.name == "claude":
        return {"kind": "claude", "api_key": emulator.api_key, "base_url": emulator.base_url}
    if runtime.name in ("openai", "gemini"):
        return {"kind": runtime.name, "api_key": emulator.api_key, "base_url": emulator.base_url}
    credentials = {
        "access_key_id": emulator.access_key_id,
        "secret_access_key": emulator.secret_access_key,
    }
    if runtime.name == "claude-bedrock":
        return {
            "kind": runtime.name,
            "region": emulator.region,
            "credentials": credentials,
            "base_url": emulator.base_url,
        }
    return {
        "kind": runtime.name,
        "region": emulator.region,
        "credentials": {**credentials, "session_token": emulator.session_token},
        "endpoint_url": emulator.data_url,
        "control_endpoint_url": emulator.control_url,
    }


def _child(tmp_path: Path, spec: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    path = tmp_path / f"spec-{len(list(tmp_path.glob('spec-*')))}.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "tests.decisions.child", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        check=False,
    )


def _answer_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode in (0, 3), done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _effects(folder: Path) -> dict[str, list[str]]:
    return {path.name: path.read_text().split() for path in sorted(folder.iterdir())}


def _texts(results: list[str]) -> str:
    return " | ".join(results)


def _script(runtime: Runtime) -> list[Any]:
    """Look up and refund (deferred), then notify (in the answering process), then end."""
    return [
        runtime.turn(tool_calls=[call("lookup", order="A1"), call("refund", amount=5)]),
        runtime.turn(tool_calls=[call("notify", text="refunded")]),
        runtime.turn(text=_texts),
    ]


@pytest.fixture
def effects(tmp_path: Path) -> Path:
    folder = tmp_path / "effects"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("runtime", RUNTIMES, ids=lambda r: r.name)
def test_a_run_stopped_in_one_process_is_finished_by_another(
    runtime: Runtime, tmp_path: Path, effects: Path
) -> None:
    store = str(tmp_path / "store")
    with runtime.start(_script(runtime)) as emulator:
        base = {"provider": _recipe(runtime, emulator), "store": store, "effects": str(effects)}
        started = _child(tmp_path, {**base, "mode": "start", "connect": runtime.connect(emulator)})
        first = _answer_of(started)
        [token] = first["tokens"]
        assert first["terminal"] == "requires_action"

        done = _answer_of(
            _child(
                tmp_path, {**base, "mode": "answer", "token": token, "answer": {"result": "5 back"}}
            )
        )

    assert done == {"terminal": "end_turn", "text": "told: refunded"}
    ran = _effects(effects)
    assert {name: len(pids) for name, pids in ran.items()} == {
        "lookup": 1,
        "notify": 1,
        "refund": 1,
    }
    assert ran["lookup"] == ran["refund"] != ran["notify"]  # two processes, each its share


def test_a_deferred_confirmation_is_answered_elsewhere_and_the_hook_never_runs_again(
    tmp_path: Path, effects: Path
) -> None:
    runtime = BY_NAME["claude"]
    bash = ToolCall("bash", {"command": "make clean"}, result="cleaned", permission="ask")
    script = [Turn(server_tool_calls=[bash]), Turn(text="done")]
    store = str(tmp_path / "store")
    with runtime.start(script) as emulator:
        base = {"provider": _recipe(runtime, emulator), "store": store, "effects": str(effects)}
        started = _answer_of(
            _child(tmp_path, {**base, "mode": "start", "connect": runtime.connect(emulator)})
        )
        [token] = started["tokens"]
        spec = {**base, "mode": "answer", "token": token, "answer": {"allow": True}}
        done = _answer_of(_child(tmp_path, spec))
        again = _answer_of(_child(tmp_path, spec))
        [session] = emulator.session_ids()
        sent = [e for e in emulator.events(session) if e["type"] == "user.tool_confirmation"]

    assert done == {"terminal": "end_turn", "text": "done"}
    assert again == {"already": True}
    assert len(_effects(effects)["hook"]) == 1  # asked once, by the first process
    assert [event["result"] for event in sent] == ["allow"]


KILL_POINTS = ["claimed", "sent", "settled", "notify"]


@pytest.mark.parametrize("point", KILL_POINTS)
@pytest.mark.parametrize("runtime", [BY_NAME["claude"], BY_NAME["openai"]], ids=lambda r: r.name)
def test_an_answer_killed_anywhere_before_the_next_stop_is_finished_by_a_retry(
    runtime: Runtime, point: str, tmp_path: Path, effects: Path
) -> None:
    store = str(tmp_path / "store")
    with runtime.start(_script(runtime)) as emulator:
        base = {"provider": _recipe(runtime, emulator), "store": store, "effects": str(effects)}
        [token] = _answer_of(
            _child(tmp_path, {**base, "mode": "start", "connect": runtime.connect(emulator)})
        )["tokens"]
        spec = {**base, "mode": "answer", "token": token, "answer": {"result": "5 back"}}

        killed = _child(tmp_path, {**spec, "kill_at": point})
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        retried = _answer_of(_child(tmp_path, spec))
        results = _posted_results(runtime, emulator)

    assert retried["terminal"] == "end_turn"
    ran = _effects(effects)
    assert {name: len(pids) for name, pids in ran.items()} == {
        "lookup": 1,
        "notify": 1,  # killed inside notify: the retry answers it as unfinished, not again
        "refund": 1,
    }
    assert sorted(results) == sorted(set(results))  # each call's result reached it once
    assert len(results) == 3


def _posted_results(runtime: Runtime, emulator: Any) -> list[str]:
    """The tool call ids whose results the provider received, one entry per delivery."""
    [session] = emulator.session_ids()
    if runtime.name == "claude":
        events = emulator.events(session)
        return [e["custom_tool_use_id"] for e in events if e["type"] == "user.custom_tool_result"]
    items = emulator.items(session)
    return [i["call_id"] for i in items if i["type"] == "function_call_output"]


def _racer(
    recipe: dict[str, Any],
    store: str,
    effects: str,
    tokens: Any,
    start: Any,
    outcomes: Any,
) -> None:
    """One of two processes answering the same tokens at the same instant."""
    from req_managed_agents import ToolLedger, answer
    from req_managed_agents.drivers import AlreadyAnsweredError

    decisions = store_of(store)
    tools = Refunds(Path(effects))
    with provider_of(dict(recipe)) as provider:
        while True:
            token = tokens.get()
            if token is None:
                return
            start.wait()
            try:
                answer(
                    provider,
                    token,
                    handler=tools,
                    decisions=decisions,
                    ledger=ToolLedger(decisions),
                    result="back",
                    timeout=60,
                )
                outcomes.put((token, "won"))
            except AlreadyAnsweredError:
                outcomes.put((token, "already"))
            except Exception as exc:  # reported to the test, which fails on it
                outcomes.put((token, f"{type(exc).__name__}: {exc}"))


TRIALS = 50


@pytest.mark.parametrize("where", ["files", "redis"])
def test_two_processes_answering_one_token_at_once_get_one_winner(
    where: str, tmp_path: Path, effects: Path, request: pytest.FixtureRequest
) -> None:
    store = (
        str(tmp_path / "store")
        if where == "files"
        else f"{request.getfixturevalue('redis_url')}#{request.getfixturevalue('redis_prefix')}"
    )
    runtime = BY_NAME["claude"]
    refunds = [call("refund", amount=n) for n in range(TRIALS)]
    script = [Turn(tool_calls=refunds), Turn(text=_texts)]
    context = multiprocessing.get_context("spawn")
    with runtime.start(script) as emulator:
        from req_managed_agents import ToolLedger, run_to_completion

        decisions = store_of(store)
        with emulator.provider(timeout=10) as provider:
            stopped = run_to_completion(
                provider,
                "Refund them all.",
                handler=Refunds(effects),
                decisions=decisions,
                ledger=ToolLedger(decisions),
                **runtime.connect(emulator),
            )
        assert len(stopped.pending) == TRIALS
        tokens = [context.Queue() for _ in range(2)]
        outcomes = context.Queue()
        start = context.Barrier(2)
        racers = [
            context.Process(
                target=_racer,
                args=(_recipe(runtime, emulator), store, str(effects), queue, start, outcomes),
            )
            for queue in tokens
        ]
        for racer in racers:
            racer.start()
        try:
            seen: dict[str, list[str]] = {}
            for decision in stopped.pending:
                for queue in tokens:
                    queue.put(decision.token)
                for _ in range(2):
                    token, outcome = outcomes.get(timeout=CHILD_TIMEOUT)
                    seen.setdefault(token, []).append(outcome)
        finally:
            for queue in tokens:
                queue.put(None)
            for racer in racers:
                racer.join(CHILD_TIMEOUT)
                if racer.is_alive():
                    racer.kill()
        session = stopped.session_id
        results = [e for e in emulator.events(session) if e["type"] == "user.custom_tool_result"]

    assert all(sorted(outcome) == ["already", "won"] for outcome in seen.values()), seen
    assert len(seen) == TRIALS
    assert len(results) == TRIALS  # the last winner sent the whole turn, once
    assert len(_effects(effects)["refund"]) == TRIALS  # each refund ran once, in the first run
