"""``rma emulator``: a runtime's emulator, served on loopback until Ctrl-C.

It prints, on standard output, the lines a shell can evaluate to point ``rma`` and the
vendor's SDK at it - ``export NAME=VALUE`` (and ``unset`` for what would get in the way),
comments otherwise - with the ids of an agent, environment or harness ready to use, then
``# ready``. :func:`emulated` starts the same emulators for ``rma demo``.

A script file (``--script FILE``) is Python whose ``script`` is the list the emulator plays,
as in tests: ``Turn`` (claude, claude-bedrock), ``ConverseTurn`` (agentcore),
``OpenAITurn`` (openai) or ``GeminiTurn`` (gemini) from ``req_managed_agents.testing``, a
plain string being a turn that only speaks. Without one, the agent is the demo's: it looks
up the weather in Paris and Tokyo with ``get_weather(city)``, then reports.
"""

from __future__ import annotations

import argparse
import contextlib
import runpy
import shlex
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from req_managed_agents.cli._common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STATUS_HELP,
    RUN_PROVIDERS,
    CliError,
)

__all__ = [
    "TITLES",
    "Emulated",
    "add_command",
    "demo_script",
    "emulated",
    "load_script",
    "run_command",
]

REGION = "us-east-1"
SANDBOX_ARN = f"arn:aws:bedrock-agentcore:{REGION}:123456789012:sandbox/emulator-0123456789"
"""The sandbox a Claude-on-Bedrock session names: the emulator takes any sandbox ARN."""
_AWS_IN_THE_WAY = ("AWS_PROFILE", "AWS_SESSION_TOKEN")
TITLES = {
    "claude": "the Claude Managed Agents API",
    "claude-bedrock": "Claude Managed Agents on Amazon Bedrock",
    "agentcore": "Bedrock AgentCore",
    "openai": "OpenAI's Agents API",
    "gemini": "Gemini Managed Agents (the Interactions API)",
}
_TRY = "What is the weather in Paris?"
_GET_WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}

EPILOG = f"""\
examples:
  rma emulator --provider openai                # then, in another shell, paste its lines
  rma emulator --provider agentcore --port 8700 --script turns.py

--script FILE is Python whose `script` is what the agent plays, one turn per input:
  from req_managed_agents.testing import Turn, call   # ConverseTurn, OpenAITurn, GeminiTurn
  script = [Turn(tool_calls=[call("get_weather", city="Oslo")]), "It is mild in Oslo."]
Without it the agent is the demo's (get_weather for Paris and Tokyo, then a report).

--port N serves on 127.0.0.1:N (agentcore: its data plane on N, control plane on N+1).
SIGTERM stops it with status 0, Ctrl-C with 130.

{EXIT_STATUS_HELP}"""


@dataclass
class Emulated:
    """A runtime's emulator, serving, and what is ready on it: ``connect`` names the agent
    (the drivers' options), ``variables`` point ``rma`` and the vendor SDK at it."""

    provider: str
    emulator: Any
    connect: dict[str, str]
    variables: dict[str, str]
    unset: tuple[str, ...] = ()
    ports: list[int] = field(default_factory=list)  # the emulator's own, in URL order


def add_command(commands: Any) -> None:
    """Register ``rma emulator`` and its options."""
    parser = commands.add_parser(
        "emulator",
        help="serve a runtime's emulator until Ctrl-C, printing how to point rma and SDKs at it",
        description="Serve an emulator of a managed agent runtime on 127.0.0.1 (no network, no "
        "credentials of yours) with an agent ready to use, and print the export lines that "
        "point rma and the vendor's SDK at it.",
        epilog=EPILOG,
    )
    parser.add_argument(
        "--provider", choices=RUN_PROVIDERS, default="claude", help="which runtime to emulate"
    )
    parser.add_argument("--script", type=Path, metavar="FILE", help="what the agent plays")
    parser.add_argument(
        "--port", type=_port, default=0, metavar="N", help="the port to serve on (default: free)"
    )


def run_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Serve until SIGTERM (exit 0) or Ctrl-C (exit 130)."""
    out = out if out is not None else sys.stdout
    script = load_script(args.script, args.provider) if args.script else None
    with emulated(args.provider, script) as running, _relays(running, args.port) as urls:
        for line in _lines(running, urls):
            out.write(line + "\n")
        out.flush()
        received = _serve_until_a_signal()
    print("rma emulator: stopped", file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED if received == signal.SIGINT else EXIT_OK


@contextlib.contextmanager
def emulated(
    provider: str, script: Sequence[Any] | None = None, delay: float = 0.0
) -> Iterator[Emulated]:
    """The emulator of ``provider`` playing ``script`` (default: the demo's agent, each
    turn taking ``delay`` seconds), with an agent, environment or harness ready."""
    from req_managed_agents import testing

    if provider == "agentcore":
        played = script if script is not None else demo_script(testing.ConverseTurn, delay)
        with testing.AgentCoreEmulator(played, region=REGION) as emulator:
            harness = emulator.add_harness(name="weather_demo")
            yield Emulated(
                provider,
                emulator,
                {"harness_arn": harness},
                {
                    **_aws(emulator),
                    "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE": emulator.data_url,
                    "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL": emulator.control_url,
                    "RMA_HARNESS_ARN": harness,
                },
                _AWS_IN_THE_WAY,
                [_port_of(emulator.data_url), _port_of(emulator.control_url)],
            )
    elif provider == "openai":
        played = script if script is not None else demo_script(testing.OpenAITurn, delay)
        with testing.OpenAIAgentsEmulator(played) as emulator:
            agent = emulator.add_agent(name="weather-demo")
            yield Emulated(
                provider,
                emulator,
                {"agent_id": agent},
                {
                    "OPENAI_BASE_URL": emulator.base_url,
                    "OPENAI_API_KEY": emulator.api_key,
                    "RMA_AGENT_ID": agent,
                },
                ports=[_port_of(emulator.base_url)],
            )
    elif provider == "gemini":
        with _gemini(script, delay) as running:
            yield running
    else:
        played = script if script is not None else demo_script(testing.Turn, delay)
        with _claude(provider, played) as running:
            yield running


@contextlib.contextmanager
def _gemini(script: Sequence[Any] | None, delay: float) -> Iterator[Emulated]:
    from req_managed_agents import testing

    played = script if script is not None else demo_script(testing.GeminiTurn, delay)
    with testing.GeminiEmulator(played) as emulator:
        # The agent declares the demo's tool, so that a client sending no tools (the
        # vendor's SDK, say) may still be called back.
        agent = emulator.add_agent(agent_id="weather-demo", tools=[_GET_WEATHER])
        yield Emulated(
            "gemini",
            emulator,
            {"agent": agent},
            {
                "GOOGLE_GEMINI_BASE_URL": emulator.base_url,
                "GOOGLE_API_KEY": emulator.api_key,
                "RMA_AGENT_ID": agent,
            },
            ports=[_port_of(emulator.base_url)],
        )


@contextlib.contextmanager
def _claude(provider: str, script: Sequence[Any]) -> Iterator[Emulated]:
    from req_managed_agents.testing import ClaudeEmulator

    bedrock = provider == "claude-bedrock"
    with ClaudeEmulator(
        script, flavor="bedrock" if bedrock else "anthropic", region=REGION
    ) as emulator:
        agent = emulator.add_agent(name="weather-demo")
        variables = {"RMA_AGENT_ID": agent}
        unset: tuple[str, ...] = ()
        if bedrock:
            variables = {
                "ANTHROPIC_BEDROCK_BASE_URL": emulator.base_url,
                **_aws(emulator),
                **variables,
                "RMA_ENVIRONMENT_ID": SANDBOX_ARN,
            }
            connect = {"agent_id": agent, "environment_id": SANDBOX_ARN}
            unset = (*_AWS_IN_THE_WAY, "AWS_BEARER_TOKEN_BEDROCK")
        else:
            environment = emulator.add_environment(name="demo-env")
            hosted = emulator.add_environment("self-hosted", config={"type": "self_hosted"})
            variables = {
                "ANTHROPIC_BASE_URL": emulator.base_url,
                "ANTHROPIC_API_KEY": emulator.api_key,
                **variables,
                "RMA_ENVIRONMENT_ID": environment,
                "RMA_SELF_HOSTED_ENVIRONMENT_ID": hosted,
                "ANTHROPIC_ENVIRONMENT_KEY": emulator.environment_key(hosted),
            }
            connect = {"agent_id": agent, "environment_id": environment}
        yield Emulated(provider, emulator, connect, variables, unset, [_port_of(emulator.base_url)])


def demo_script(turn: Any, delay: float = 0.0) -> list[Any]:
    """The demo's agent, in the turns of one emulator: look up two cities, then report."""
    from req_managed_agents.testing import call

    return [
        turn(
            text="Let me look up both cities.",
            tool_calls=[call("get_weather", city="Paris"), call("get_weather", city="Tokyo")],
            usage=(412, 58),
            delay=delay,
        ),
        turn(
            text=lambda results: "Here is the weather: " + "; ".join(results) + ".",
            usage=(530, 41),
            delay=delay,
        ),
    ]


def load_script(path: Path, provider: str) -> list[Any]:
    """The ``script`` a script file defines, checked to be turns of ``provider``'s emulator."""
    from req_managed_agents import testing

    turns = {
        "agentcore": testing.ConverseTurn,
        "openai": testing.OpenAITurn,
        "gemini": testing.GeminiTurn,
    }
    turn = turns.get(provider, testing.Turn)
    hint = f"rma emulator --help shows the format ({turn.__name__} turns for {provider})"
    if not path.is_file():
        raise CliError(f"the script {path} does not exist", hint=hint)
    try:
        defined = runpy.run_path(str(path), run_name="__rma_script__")
    except Exception as exc:
        raise CliError(f"the script {path} failed to load: {exc!r}", hint=hint) from None
    script = defined.get("script")
    if script is None:
        raise CliError(f"the script {path} has no `script`", hint=hint)
    if not isinstance(script, (list, tuple)) or not all(
        isinstance(step, (str, turn)) for step in script
    ):
        raise CliError(
            f"the script {path}: `script` must be a list of {turn.__name__} or str", hint=hint
        )
    return list(script)


def _aws(emulator: Any) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": emulator.access_key_id,
        "AWS_SECRET_ACCESS_KEY": emulator.secret_access_key,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,  # what boto3 reads
    }


def _port_of(url: str) -> int:
    return int(url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65534:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r} (0 to 65534)")
    return port


@contextlib.contextmanager
def _relays(running: Emulated, port: int) -> Iterator[dict[int, int]]:
    """With ``--port``, a relay from N (and N+1, ...) to each of the emulator's ports;
    yields which port each of the emulator's is reached at."""
    if not port:
        yield {own: own for own in running.ports}
        return
    from req_managed_agents.cli._relay import PortRelay

    relays: list[PortRelay] = []
    try:
        for offset, own in enumerate(running.ports):
            try:
                relays.append(PortRelay(port + offset, own))
            except OSError as exc:
                raise CliError(
                    f"cannot serve on port {port + offset}: {exc.strerror or exc}",
                    hint="choose another --port, or leave it out for a free one",
                ) from None
        yield {own: relay.port for own, relay in zip(running.ports, relays)}
    finally:
        for relay in relays:
            relay.close()


def _lines(running: Emulated, urls: Mapping[int, int]) -> list[str]:
    """What ``rma emulator`` prints: comments, ``unset`` and ``export`` lines."""
    variables = dict(running.variables)
    for name, value in variables.items():
        if value.startswith("http://127.0.0.1:"):
            own = _port_of(value)
            variables[name] = value.replace(f":{own}", f":{urls[own]}", 1)
    first = next(v for v in variables.values() if v.startswith("http://"))
    lines = [
        f"# rma emulator: {TITLES[running.provider]} at {first} (loopback only)",
        "# Paste these lines into another shell; rma and the vendor's SDK then use it.",
    ]
    if running.unset:
        lines.append("unset " + " ".join(running.unset))
    lines += [f"export {name}={shlex.quote(value)}" for name, value in variables.items()]
    lines.append(f"# try: {_try(running)}")
    lines.append("# ready; Ctrl-C stops it")
    return lines


def _try(running: Emulated) -> str:
    if running.provider == "agentcore":
        flags = '--harness-arn "$RMA_HARNESS_ARN"'
    elif running.provider in ("openai", "gemini"):
        flags = '--agent-id "$RMA_AGENT_ID"'
    else:
        flags = '--agent-id "$RMA_AGENT_ID" --environment-id "$RMA_ENVIRONMENT_ID"'
    return f"rma run --provider {running.provider} {flags} {shlex.quote(_TRY)}"


def _serve_until_a_signal() -> int:
    """Wait for SIGTERM or SIGINT; which came. The process's handlers are back after."""
    stop = threading.Event()
    received: list[int] = []

    def on_signal(number: int, frame: FrameType | None) -> None:
        received.append(number)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        stop.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return received[0]
