"""``rma demo``: one session whose tool runs on this machine, end to end.

With no credentials it runs against the built-in emulator (a real HTTP server on loopback
playing a scripted agent), so it works on a fresh clone with no network. Given an Anthropic
API key and ``--agent-id``/``--environment-id`` it runs the same code against the real API;
the agent must declare a custom tool ``get_weather(city: str)``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO

from req_managed_agents._stream import MessageDone, TextDelta, ToolCallFinished, ToolCallStarted
from req_managed_agents._tools import Tools
from req_managed_agents._vocabulary import SessionResult

__all__ = ["add_arguments", "run_demo"]

DEMO_PROMPT = "What is the weather in Paris and in Tokyo?"
_FORECASTS = {"paris": "18 C and sunny", "tokyo": "24 C with light rain"}


def demo_tools() -> Tools:
    """The demo's one local tool."""
    return Tools([get_weather])


def get_weather(city: str) -> str:
    """The current weather in a city.

    Args:
        city: The city name, in English.
    """
    return f"{city}: {_FORECASTS.get(city.strip().lower(), '20 C and clear')}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``rma demo`` options."""
    parser.add_argument("--provider", choices=("claude", "agentcore"), default="claude")
    parser.add_argument("--prompt", default=DEMO_PROMPT, help="what to ask the agent")
    parser.add_argument("--agent-id", help="a real Claude agent (with ANTHROPIC_API_KEY)")
    parser.add_argument("--environment-id", help="a real Claude environment (with --agent-id)")
    parser.add_argument("--harness-arn", help="a real AgentCore harness (with AWS credentials)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds for the whole run")
    parser.add_argument(
        "--turn-delay",
        type=float,
        default=0.0,
        help="built-in emulators only: seconds the scripted agent takes per turn (default 0)",
    )


def run_demo(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the demo session, showing it as it happens, then a summary; the exit code says
    whether it ended well."""
    out = out if out is not None else sys.stdout
    if args.turn_delay < 0:
        out.write("--turn-delay must not be negative\n")
        return 2
    if args.turn_delay and (args.agent_id or args.environment_id or args.harness_arn):
        out.write("--turn-delay only applies to the built-in emulators\n")
        return 2
    if args.provider == "agentcore":
        result = _run_agentcore(args, out)
    elif args.agent_id or args.environment_id:
        if not (args.agent_id and args.environment_id and os.environ.get("ANTHROPIC_API_KEY")):
            out.write("the real API needs ANTHROPIC_API_KEY, --agent-id and --environment-id\n")
            return 2
        result = _run_claude(args, out)
    else:
        result = _run_claude_emulator(args, out)
    _summarise(result, out)
    return 0 if result.terminal == "end_turn" else 1


def _show(provider: Any, args: argparse.Namespace, out: TextIO, **connect: Any) -> SessionResult:
    """Stream one run: the agent's text as it is written, each tool call as it runs."""
    from req_managed_agents._session import Session

    speaking = False
    with Session(provider, handler=demo_tools(), **connect) as session:
        for item in session.stream(args.prompt, timeout=args.timeout):
            if isinstance(item, TextDelta):
                _say(out, item.text if speaking else f"agent> {item.text}")
                speaking = True
            elif isinstance(item, MessageDone) and speaking:
                _say(out, "\n")
                speaking = False
            elif isinstance(item, ToolCallStarted):
                _say(out, f"  -> {item.tool_use.name}({dict(item.tool_use.input)})\n")
            elif isinstance(item, ToolCallFinished):
                _say(out, f"  <- {item.result.content!r}\n")
            elif isinstance(item, SessionResult):
                return item
    raise AssertionError("a stream always ends with its SessionResult")


def _say(out: TextIO, text: str) -> None:
    out.write(text)
    out.flush()


def _script(turn: Any, call: Any, delay: float) -> list[Any]:
    """The scripted agent of both emulators: look up two cities, then report."""
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


def _run_claude(args: argparse.Namespace, out: TextIO) -> SessionResult:
    from req_managed_agents.providers import ClaudeManagedAgents

    out.write("Running against the Claude Managed Agents API.\n")
    with ClaudeManagedAgents() as provider:
        return _show(
            provider, args, out, agent_id=args.agent_id, environment_id=args.environment_id
        )


def _run_claude_emulator(args: argparse.Namespace, out: TextIO) -> SessionResult:
    from req_managed_agents.testing import ClaudeEmulator, Turn, call

    with ClaudeEmulator(_script(Turn, call, args.turn_delay)) as emulator:
        out.write(f"Running against the built-in emulator at {emulator.base_url} (no network).\n")
        agent_id = emulator.add_agent(name="weather-demo")
        environment_id = emulator.add_environment(name="demo-env")
        with emulator.provider() as provider:
            return _show(provider, args, out, agent_id=agent_id, environment_id=environment_id)


def _run_agentcore(args: argparse.Namespace, out: TextIO) -> SessionResult:
    from req_managed_agents.providers import BedrockAgentCore

    if args.harness_arn:
        out.write("Running against Bedrock AgentCore.\n")
        with BedrockAgentCore() as provider:
            return _show(provider, args, out, harness_arn=args.harness_arn, tools=demo_tools())
    from req_managed_agents.testing import AgentCoreEmulator, ConverseTurn, call

    with AgentCoreEmulator(_script(ConverseTurn, call, args.turn_delay)) as emulator:
        out.write(
            f"Running against the built-in AgentCore emulator at {emulator.data_url} "
            "(SigV4-signed, no network).\n"
        )
        harness_arn = emulator.add_harness(name="weather_demo")
        with emulator.provider() as provider:
            return _show(provider, args, out, harness_arn=harness_arn)


def _summarise(result: SessionResult, out: TextIO) -> None:
    usage = result.usage
    out.write(
        f"\nsession  {result.session_id}\n"
        f"result   {result.terminal} after {result.turns} turns\n"
        f"usage    {usage.input_tokens} input + {usage.output_tokens} output tokens\n"
        f"tools    {len(result.tool_uses)} local call(s)\n"
    )
    for tool_use, tool_result in zip(result.tool_uses, result.tool_results):
        marker = "error" if tool_result.is_error else "ok"
        out.write(
            f"  - {tool_use.name}({dict(tool_use.input)}) -> {tool_result.content!r} [{marker}]\n"
        )
