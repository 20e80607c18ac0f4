"""The AgentCore emulator itself: its parts assembled on one state and one server (two
listeners), and what it offers tests (set-up, faults and observations).

botocore is imported when an emulator is created, never when this module is imported.
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._script import as_script
from req_managed_agents.testing.agentcore._api import AgentCoreAPI
from req_managed_agents.testing.agentcore._commands import _ShellRunner
from req_managed_agents.testing.agentcore._control import _HARNESS_NAME, ControlPlane
from req_managed_agents.testing.agentcore._converse import ConverseTurn
from req_managed_agents.testing.agentcore._frame_faults import _FrameFault
from req_managed_agents.testing.agentcore._invoke import Invoker
from req_managed_agents.testing.agentcore._runtimes import Runtimes
from req_managed_agents.testing.agentcore._shapes import _service_model
from req_managed_agents.testing.agentcore._sigv4 import _random_keys, _SigV4Verifier
from req_managed_agents.testing.agentcore._state import AgentCoreState
from req_managed_agents.testing.agentcore._wire import _bad_crc, _error, _event, _exception
from req_managed_agents.testing.server import Lifecycle, LoopbackEmulator, LoopbackServer

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Callable

    from req_managed_agents.providers.agentcore import BedrockAgentCore
    from req_managed_agents.testing.agentcore._commands import CommandOutput, CommandRecord
    from req_managed_agents.testing.agentcore._harness import Deletion
    from req_managed_agents.testing.agentcore._records import Invocation, StoppedSession


class AgentCoreEmulator(LoopbackEmulator):
    """A Bedrock AgentCore Harness service on ``127.0.0.1`` whose harnesses play scripts.

    Starts serving on construction. ``script`` is the default script of harnesses created
    without one (over CreateHarness or with :meth:`add_harness`). Requests must be signed
    with ``access_key_id`` / ``secret_access_key`` (random unless given) for ``region``, and
    carry ``x-amz-security-token: <session_token>`` when a session token is set.
    ``command_runner(command, timeout)`` runs InvokeAgentRuntimeCommand commands (default:
    ``/bin/sh`` in the temporary directory ``workdir``). A deleted harness answers as
    ``DELETING`` to ``delete_after`` GetHarness/ListHarnesses calls, then is gone (see
    :meth:`script_deletion`). A harness's ``DEFAULT`` endpoint, which invocations without a
    ``qualifier`` need, appears ``endpoint_delay`` seconds after the harness is ``READY``
    (None: never; see :meth:`delay_default_endpoints`).
    """

    def __init__(
        self,
        script: Sequence[ConverseTurn | str] | None = None,
        *,
        region: str = "us-east-1",
        account_id: str = "123456789012",
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        command_runner: Callable[[str, float | None], CommandOutput] | None = None,
        delete_after: int = 1,
        endpoint_delay: float | None = 0.0,
    ) -> None:
        if not re.fullmatch(r"[a-z0-9-]+", region):
            raise ValueError(f"not a region name: {region!r}")
        if not re.fullmatch(r"[0-9]{12}", account_id):
            raise ValueError("account_id must be 12 digits")
        if delete_after < 0:
            raise ValueError("delete_after must not be negative")
        random_id, random_secret = _random_keys()
        self.access_key_id = access_key_id or random_id
        self.secret_access_key = secret_access_key or random_secret
        self.session_token = session_token
        # It verifies signatures with botocore, so it needs the same extra as the provider
        # (loaded now, not at import: the testing package must not need botocore).
        sigv4 = _SigV4Verifier(
            self.access_key_id, self.secret_access_key, region, session_token=session_token
        )
        self._default_script = default_script = as_script(script, ConverseTurn)
        data_model = _service_model("bedrock-agentcore")
        control_model = _service_model("bedrock-agentcore-control")
        self.region = region
        self.account_id = account_id
        self._shell: _ShellRunner | None = None
        if command_runner is None:
            self._shell = command_runner = _ShellRunner()
        self.workdir = None if self._shell is None else self._shell.workdir
        # Built leaves first: each part is handed the state and the parts it calls.
        lifecycle = Lifecycle(type(self).__name__)
        self._state = state = AgentCoreState(lifecycle.condition)
        self.delay_default_endpoints(endpoint_delay)
        self._control = control = ControlPlane(
            state,
            control_model,
            region=region,
            account_id=account_id,
            default_script=default_script,
            delete_after=delete_after,
        )
        routes = {
            "data": [
                *Invoker(lifecycle, state, data_model).routes(),
                *Runtimes(state, data_model, command_runner).routes(),
            ],
            "control": control.routes(),
        }
        server = LoopbackServer(
            lifecycle, AgentCoreAPI(state, sigv4, routes), listeners=("data", "control")
        )
        super().__init__(server)
        self.data_url = server.urls["data"]
        self.control_url = server.urls["control"]

    def __repr__(self) -> str:  # never the secret or the token
        state = " closed" if self._server.lifecycle.stopping else ""
        return (
            f"<AgentCoreEmulator data={self.data_url} control={self.control_url} "
            f"region={self.region} access_key_id={self.access_key_id}{state}>"
        )

    def close(self) -> None:
        """Kill running commands, stop serving and remove the command working directory."""
        if self._shell is not None:
            self._shell.close()
        super().close()

    # --- set-up and faults for tests ------------------------------------------------------

    def provider(self, **options: Any) -> BedrockAgentCore:
        """A ``BedrockAgentCore`` signed with this emulator's credentials and pointed at its
        two planes; ``options`` go to its constructor (``timeout``, ``idle_timeout``, ...)."""
        from req_managed_agents.providers.agentcore import BedrockAgentCore

        credentials = {
            "access_key_id": self.access_key_id,
            "secret_access_key": self.secret_access_key,
            "session_token": self.session_token,
        }
        return BedrockAgentCore(
            self.region,
            credentials=credentials,
            endpoint_url=self.data_url,
            control_endpoint_url=self.control_url,
            **options,
        )

    def add_harness(
        self,
        script: Sequence[ConverseTurn | str] | None = None,
        name: str = "harness",
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> str:
        """Create a READY harness that plays ``script`` (default: the emulator's); return its
        ARN. ``name`` must be free, as over CreateHarness.

        ``tools`` are the harness's deployed tools (AgentCore tool objects, as CreateHarness
        takes them). By default it deploys an ``inline_function`` for each tool the script
        calls, as a harness made for that agent would: a client that declares no tools of
        its own still gets the calls handed back (and answers those it has no handler for
        with an error result). ``tools=[]`` deploys none.
        """
        if not _HARNESS_NAME.fullmatch(name):
            raise ValueError(f"harness names match {_HARNESS_NAME.pattern}, not {name!r}")
        with self._state.condition:
            if self._state.named(name) is not None:
                raise ValueError(f"a harness named {name!r} already exists")
            role = f"arn:aws:iam::{self.account_id}:role/AgentCoreEmulator"
            scripted = None if script is None else as_script(script, ConverseTurn)
            played = self._default_script if scripted is None else scripted
            deployed = _called_tools(played) if tools is None else [dict(t) for t in tools]
            body = {"harnessName": name, "executionRoleArn": role, "tools": deployed}
            return str(self._control.new_harness(body, ("READY",), scripted).record["arn"])

    def harness_statuses(self, statuses: Sequence[str], name: str | None = None) -> None:
        """Set the statuses GetHarness walks through, one per call; the last one sticks.

        They apply to the next harness created over CreateHarness, or with ``name`` to the
        live harness of that name (from its first status again) or else to the next one
        created with that name. Any string goes, so clients can meet an unknown status.
        """
        script = tuple(statuses)
        if not script or not all(isinstance(s, str) and s for s in script):
            raise ValueError("statuses must be a non-empty sequence of strings")
        with self._state.condition:
            harness = None if name is None else self._state.named(name)
            if harness is None:
                self._state.next_statuses[name] = script
            else:
                harness.set_statuses(script)

    def delay_default_endpoints(self, seconds: float | None) -> None:
        """Make every harness's ``DEFAULT`` endpoint appear (``READY``) ``seconds`` after
        the harness turned ``READY`` (None: never). Until then GetHarnessEndpoint answers
        404 and InvokeHarness without a qualifier is refused, as live after a fresh create."""
        if seconds is not None and seconds < 0:
            raise ValueError("an endpoint delay must not be negative")
        with self._state.condition:
            self._state.endpoint_delay = seconds

    def script_deletion(self, name: str, outcome: Deletion) -> None:
        """How deleting the live harness ``name`` ends once it has answered ``DELETING``
        ``delete_after`` times: ``"gone"`` (the default), ``"failed"`` (``DELETE_FAILED``)
        or ``"stuck"`` (``DELETING`` for good)."""
        if outcome not in ("gone", "failed", "stuck"):
            raise ValueError(f"a deletion ends 'gone', 'failed' or 'stuck', not {outcome!r}")
        with self._state.condition:
            harness = self._state.named(name)
            if harness is None:
                raise ValueError(f"no live harness named {name!r}")
            harness.deletion = outcome

    def exception_frame(
        self,
        exception_type: str = "internalServerException",
        message: str = "injected failure",
        after_frames: int = 1,
        times: int = 1,
    ) -> None:
        """After ``after_frames`` frames of the next ``times`` turns, send an exception frame
        (``:message-type exception``) and end the stream.

        Frame faults apply to invocations in the order they were added, one per invocation.
        A fault placed after the turn's ``messageStop`` finds the turn committed.
        """
        self._add_frame_fault(
            _FrameFault("exception", after_frames, times, _exception(exception_type, message))
        )

    def error_frame(self, code: str, message: str, after_frames: int = 1, times: int = 1) -> None:
        """Like :meth:`exception_frame`, with an unmodeled ``:message-type error`` frame."""
        self._add_frame_fault(_FrameFault("error", after_frames, times, _error(code, message)))

    def corrupt_frame(self, after_frames: int, times: int = 1) -> None:
        """Like :meth:`exception_frame`, with a frame whose message CRC is wrong: a client's
        decoder must give up on the stream there.

        With ``after_frames`` short of the turn's ``messageStop`` (frame ``n - 2`` of ``n``)
        the turn is not committed, as with :meth:`truncate_stream`; from ``n - 1`` on the
        corrupt frame follows ``messageStop`` (in place of, or after, ``metadata``), and
        the turn is committed.
        """
        frame = _bad_crc(_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {}}))
        self._add_frame_fault(_FrameFault("corrupt", after_frames, times, frame))

    def truncate_stream(self, after_frames: int = 2, times: int = 1) -> None:
        """End the next ``times`` turn streams cleanly after ``after_frames`` frames, before
        ``messageStop``; the turn is played again by the next invocation."""
        self._add_frame_fault(_FrameFault("truncate", after_frames, times))

    def truncate_after_commit(self, times: int = 1, abrupt: bool = False) -> None:
        """Play the next ``times`` turns through ``messageStop``, committing them as a stream
        written in full does, then end the stream without its ``metadata`` frame: cleanly,
        or with ``abrupt`` by cutting the connection (no terminating chunk). The client has
        the whole turn but its usage; a retry of the invocation meets the next turn."""
        self._add_frame_fault(_FrameFault("after_commit", 0, times, abrupt=abrupt))

    def stall_stream(self, after_frames: int, seconds: float) -> None:
        """Once: after ``after_frames`` frames, go silent for ``seconds``, then cut the
        connection."""
        self._add_frame_fault(_FrameFault("stall", after_frames, 1, seconds=seconds))

    def pending_faults(self) -> int:
        """How many shots of the injected faults have not fired yet (hooks excluded), so a
        test can check that the fault it set up was met."""
        with self._state.condition:
            frame_faults = sum(fault.remaining for fault in self._state.frame_faults)
            return super().pending_faults() + frame_faults

    def _add_frame_fault(self, fault: _FrameFault) -> None:
        with self._state.condition:
            self._state.frame_faults.append(fault)

    # --- observation for tests ------------------------------------------------------------

    @property
    def invocations(self) -> list[Invocation]:
        """Every well-formed InvokeHarness request, oldest first (a snapshot)."""
        with self._state.condition:
            return list(self._state.invocations)

    @property
    def stopped_sessions(self) -> list[StoppedSession]:
        """Every well-formed StopRuntimeSession request, oldest first (a snapshot)."""
        with self._state.condition:
            return list(self._state.stopped_sessions)

    @property
    def commands(self) -> list[CommandRecord]:
        """Every well-formed InvokeAgentRuntimeCommand request, oldest first (a snapshot)."""
        with self._state.condition:
            return list(self._state.commands)

    @property
    def signature_failures(self) -> list[tuple[str, str, str]]:
        """``(method, path, reason)`` of each request rejected for its signature."""
        with self._state.condition:
            return list(self._state.signature_failures)

    def turn_frames(self, harness_arn: str, runtime_session_id: str) -> list[list[dict[str, Any]]]:
        """The frames of each turn the conversation committed, oldest first, as Converse
        events (``{event type: payload}``): what the committing invocation wrote, through
        ``messageStop`` and ``metadata`` when it went out. A client that moved past a turn
        must have received all of them. Empty for a conversation never invoked."""
        with self._state.condition:
            conversation = self._state.conversations.get((harness_arn, runtime_session_id))
            turns = [] if conversation is None else conversation.frames
            return copy.deepcopy(turns)

    def harnesses(self) -> list[dict[str, Any]]:
        """The live harnesses as GetHarness shows them, oldest first, without observing them."""
        with self._state.condition:
            return [h.view() for h in sorted(self._state.harnesses.values(), key=lambda h: h.order)]


def _called_tools(script: Sequence[ConverseTurn]) -> list[dict[str, Any]]:
    """An open ``inline_function`` for each tool ``script`` calls, in first-call order."""
    names = dict.fromkeys(c.name for turn in script for c in turn.tool_calls)
    return [
        {
            "type": "inline_function",
            "name": name,
            "config": {
                "inlineFunction": {
                    "description": f"{name}, as the scripted agent calls it",
                    "inputSchema": {"type": "object"},
                }
            },
        }
        for name in names
    ]
