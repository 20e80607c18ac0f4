"""Keyed runs (``idempotency_key=``) where they meet the user's world: a session the caller
named is never deleted, a retried prompt is looked for only after where the history stood
when its key was bound, and a session whose creator was SIGKILLed before recording it is
found again and adopted - on Claude, Claude on Bedrock and OpenAI, over the emulators, with
real processes where the promise spans them."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import FileStore, ToolLedger, Tools, run_to_completion
from req_managed_agents.errors import NotFoundError
from req_managed_agents.stores._records import records_of
from req_managed_agents.testing import ClaudeEmulator, OpenAIAgentsEmulator, OpenAITurn, Turn

SANDBOX = "arn:aws:bedrock-agentcore:us-west-2:123456789012:sandbox/dev-0123456789"
ANSWERS = ["first answer", "second answer", "third answer"]


@dataclass
class Runtime:
    """One runtime's emulator, and how a test reads it the same way on all of them."""

    name: str
    emulator: Any

    def provider(self) -> Any:
        return self.emulator.provider()

    def new_session(self) -> dict[str, Any]:
        """Connect options that start a session whose agent answers ``ANSWERS`` in turn."""
        if self.name == "openai":
            return {"agent_id": self.emulator.add_agent([OpenAITurn(text=t) for t in ANSWERS])}
        agent = self.emulator.add_agent([Turn(text=t) for t in ANSWERS])
        environment = SANDBOX if self.name == "bedrock" else self.emulator.add_environment()
        return {"agent_id": agent, "environment_id": environment}

    def prompts(self, session_id: str) -> list[str]:
        """The user messages the session recorded, in order."""
        if self.name == "openai":
            return [
                part["text"]
                for item in self.emulator.items(session_id)
                if item.get("type") == "message" and item.get("role") == "user"
                for part in item["content"]
            ]
        return [
            block["text"]
            for event in self.emulator.events(session_id)
            if event["type"] == "user.message"
            for block in event["content"]
        ]

    def alive(self) -> list[str]:
        """The sessions not deleted, oldest first."""
        alive = []
        with self.provider() as provider:
            for session_id in self.emulator.session_ids():
                try:
                    provider.client.get_session(session_id)
                except NotFoundError:
                    continue
                alive.append(session_id)
        return alive

    def child_spec(self, **fields: Any) -> str:
        """What a child process needs to run a keyed run against this emulator."""
        emulator = self.emulator
        spec: dict[str, Any] = {"kind": self.name, "base_url": emulator.base_url, **fields}
        if self.name == "bedrock":
            spec["region"] = emulator.region
            spec["credentials"] = {
                "access_key_id": emulator.access_key_id,
                "secret_access_key": emulator.secret_access_key,
            }
        else:
            spec["api_key"] = emulator.api_key
        return json.dumps(spec)

    def kill_on(self, what: str, pid: Callable[[], int]) -> None:
        """SIGKILL the child as the emulator takes its create (``"create"``: the session is
        still made) or its prompt (``"prompt"``: then the prompt is not recorded)."""

        def kill() -> None:
            os.kill(pid(), signal.SIGKILL)

        if what == "create":
            path = r"/v1/agents/sessions" if self.name == "openai" else r"/v1/sessions"
            self.emulator.before_requests("POST", path, kill)
            return
        path = (
            r"/v1/agents/sessions/.+/events" if self.name == "openai" else r"/v1/sessions/.+/events"
        )
        # The hook kills the child; the 500 after it keeps the prompt from being recorded.
        self.emulator.before_requests("POST", path, kill, where=_prompt_post)
        self.emulator.fail_requests("POST", path, 500, where=_prompt_post)


def _prompt_post(request: Any) -> bool:
    events = request.body.get("events") if isinstance(request.body, dict) else None
    prompts = ("user.message", "agent.session.input.message")
    return bool(events) and events[0].get("type") in prompts


@pytest.fixture(params=["claude", "bedrock", "openai"])
def runtime(request: pytest.FixtureRequest) -> Iterator[Runtime]:
    if request.param == "openai":
        with OpenAIAgentsEmulator() as emulator:
            yield Runtime("openai", emulator)
        return
    flavor = {"flavor": "bedrock", "region": "us-west-2"} if request.param == "bedrock" else {}
    with ClaudeEmulator(**flavor) as emulator:
        yield Runtime(request.param, emulator)


CHILD = textwrap.dedent(
    """
    import json, sys
    from req_managed_agents import FileStore, ToolLedger, Tools, run_to_completion
    from req_managed_agents.errors import NotFoundError

    spec = json.loads(sys.argv[1])
    if spec["kind"] == "openai":
        from req_managed_agents import OpenAIAgents
        provider = OpenAIAgents(spec["api_key"], base_url=spec["base_url"])
    elif spec["kind"] == "bedrock":
        from req_managed_agents import ClaudeManagedAgentsBedrock
        provider = ClaudeManagedAgentsBedrock(
            spec["region"], credentials=spec["credentials"], base_url=spec["base_url"]
        )
    else:
        from req_managed_agents import ClaudeManagedAgents
        provider = ClaudeManagedAgents(spec["api_key"], base_url=spec["base_url"])
    result = run_to_completion(
        provider, spec["prompt"], handler=Tools(), ledger=ToolLedger(FileStore(spec["ledger"])),
        idempotency_key=spec["key"], timeout=60, **spec["connect"],
    )
    print(result.text, flush=True)
    """
)


def run_child_until_killed(runtime: Runtime, kill_on: str, **spec: Any) -> None:
    """Run a keyed run in a child process that the emulator SIGKILLs at ``kill_on``."""
    child: list[subprocess.Popen[str]] = []
    runtime.kill_on(kill_on, lambda: child[0].pid)
    command = [sys.executable, "-c", CHILD, runtime.child_spec(**spec)]
    child.append(
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    )
    _, stderr = child[0].communicate(timeout=60)
    assert child[0].returncode == -signal.SIGKILL, stderr


def keyed(runtime: Runtime, ledger: ToolLedger, prompt: str, **connect: Any) -> Any:
    with runtime.provider() as provider:
        return run_to_completion(
            provider,
            prompt,
            handler=Tools(),
            ledger=ledger,
            idempotency_key="job-1",
            timeout=30,
            **connect,
        )


def session_asked(runtime: Runtime, prompt: str) -> str:
    """A session of the user's own that was asked ``prompt`` and answered it."""
    with runtime.provider() as provider:
        result = run_to_completion(
            provider, prompt, handler=Tools(), timeout=30, **runtime.new_session()
        )
    assert result.text == ANSWERS[0]
    assert result.session_id is not None
    return result.session_id


class RacedStore(FileStore):
    """A store in which another process binds ``job-1`` to ``session_id`` just before this
    one first writes that binding: as it binds the key (``at="bind"``), or as it records the
    session it opened (``at="open"``)."""

    def __init__(self, path: Path, session_id: str, prompt: str, at: str) -> None:
        super().__init__(path)
        digest = hashlib.sha256(prompt.encode()).hexdigest()[:32]
        self.theirs = {"session_id": session_id, "prompt": digest, "phase": "new", "by": "them"}
        self.at = at
        self.raced = False

    def add_record(self, key: str, value: Any, *, ttl: float | None = None) -> bool:
        if self.at == "bind" and key.startswith("ledger-runs:") and not self.raced:
            self.raced = True
            assert super().add_record(key, self.theirs)
        return super().add_record(key, value, ttl=ttl)

    def replace_record(
        self, key: str, expected: Any, value: Any, *, ttl: float | None = None
    ) -> bool:
        opening = isinstance(expected, dict) and expected.get("phase") == "opening"
        if self.at == "open" and opening and not self.raced:
            self.raced = True
            assert super().replace_record(key, expected, self.theirs)
        return super().replace_record(key, expected, value, ttl=ttl)


@pytest.mark.parametrize("race_at", ["bind", "open"])
def test_a_keyed_run_that_loses_its_race_never_deletes_the_session_it_was_given(
    runtime: Runtime, tmp_path: Path, race_at: str
) -> None:
    session_id = session_asked(runtime, "hello")
    store = RacedStore(tmp_path / "ledger.json", session_id, "go on", race_at)
    result = keyed(runtime, ToolLedger(store), "go on", session_id=session_id)
    assert store.raced
    assert session_id in runtime.alive(), "the caller's session was deleted"
    assert result.session_id == session_id
    assert result.text == ANSWERS[1]
    assert runtime.prompts(session_id) == ["hello", "go on"]


def test_a_keyed_run_on_a_fresh_session_that_loses_its_race_deletes_only_what_it_made(
    runtime: Runtime, tmp_path: Path
) -> None:
    theirs = session_asked(runtime, "go on")
    store = RacedStore(tmp_path / "ledger.json", theirs, "go on", "open")
    result = keyed(runtime, ToolLedger(store), "go on", **runtime.new_session())
    assert store.raced
    assert result.session_id == theirs, "the run went on with the session the key names"
    assert result.text == ANSWERS[0]
    assert runtime.alive() == [theirs], "the session it made was deleted"
    assert runtime.prompts(theirs) == ["go on"]


def test_a_retried_keyed_prompt_is_not_mistaken_for_an_earlier_message_of_the_same_text(
    runtime: Runtime, tmp_path: Path
) -> None:
    session_id = session_asked(runtime, "yes")  # an earlier "yes", answered
    ledger_path = tmp_path / "ledger.json"
    spec = {"prompt": "yes", "key": "job-1", "ledger": str(ledger_path)}
    run_child_until_killed(runtime, "prompt", connect={"session_id": session_id}, **spec)
    assert runtime.prompts(session_id) == ["yes"], "the first attempt died before posting"
    result = keyed(runtime, ToolLedger(FileStore(ledger_path)), "yes", session_id=session_id)
    assert result.text == ANSWERS[1], "answered now, not from the past"
    assert runtime.prompts(session_id) == ["yes", "yes"]


def test_a_session_created_by_a_keyed_run_killed_before_recording_it_is_adopted(
    runtime: Runtime, tmp_path: Path
) -> None:
    ledger_path = tmp_path / "ledger.json"
    connect = runtime.new_session()
    spec = {"prompt": "go", "key": "job-1", "ledger": str(ledger_path), "connect": connect}
    run_child_until_killed(runtime, "create", **spec)
    assert emulator_sessions(runtime) == 1, "the killed attempt's create was taken"
    result = keyed(runtime, ToolLedger(FileStore(ledger_path)), "go", **connect)
    assert emulator_sessions(runtime) == 1, "no second session; none left behind empty"
    assert result.text == ANSWERS[0]
    assert result.session_id is not None
    assert runtime.prompts(result.session_id) == ["go"]


def emulator_sessions(runtime: Runtime) -> int:
    return len(runtime.emulator.session_ids())


def test_a_keyed_run_refuses_metadata_that_leaves_no_room_for_its_create_token(
    tmp_path: Path,
) -> None:
    with ClaudeEmulator() as emulator, emulator.provider() as provider:
        full = {f"k{i}": "v" for i in range(16)}
        with pytest.raises(ValueError, match="create token"):
            run_to_completion(
                provider,
                "go",
                handler=Tools(),
                ledger=ToolLedger(FileStore(tmp_path / "ledger.json")),
                idempotency_key="job-1",
                agent_id=emulator.add_agent(),
                environment_id=emulator.add_environment(),
                session_metadata=full,
            )
        assert emulator.session_ids() == []


def test_the_store_holds_the_binding_and_its_token_before_the_session_is_made(
    tmp_path: Path,
) -> None:
    """The order that makes a lost create findable: bind (with the token), then create."""
    store = FileStore(tmp_path / "ledger.json")
    seen: list[Any] = []
    with ClaudeEmulator([Turn(text="done")]) as emulator, emulator.provider() as provider:
        emulator.before_requests(
            "POST",
            r"/v1/sessions",
            lambda: seen.append(records_of(store).get_record("ledger-runs:job-1")),
        )
        result = run_to_completion(
            provider,
            "go",
            handler=Tools(),
            ledger=ToolLedger(store),
            idempotency_key="job-1",
            agent_id=emulator.add_agent(),
            environment_id=emulator.add_environment(),
            timeout=20,
        )
        assert result.session_id is not None
        session = provider.client.get_session(result.session_id)
    assert seen[0]["phase"] == "opening"
    assert session["metadata"]["rma_create"] == seen[0]["token"]
