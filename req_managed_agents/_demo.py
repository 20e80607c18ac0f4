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
from collections.abc import Mapping
from typing import Any, TextIO

from req_managed_agents._tools import Tools
from req_managed_agents._vocabulary import SessionInfo, SessionResult

__all__ = ["add_arguments", "run_demo"]

DEMO_PROMPT = "What is the weather in Paris and in Tokyo?"
_FORECASTS = {"paris": "18 C and sunny", "tokyo": "24 C with light rain"}


class DemoTools(Tools):
    """The demo's one local tool, plus live printing of what the agent says."""

    def __init__(self, out: TextIO) -> None:
        super().__init__([get_weather])
        self._out = out
        self._speaking = False

    def handle_event(self, event: Mapping[str, Any], info: SessionInfo) -> None:
        if event.get("type") == "agent.message":  # Claude: one event per message
            for block in event.get("content") or ():
                if isinstance(block, Mapping) and block.get("type") == "text":
                    self._say(f"agent> {block.get('text', '')}\n")
            return
        delta = event.get("contentBlockDelta")  # AgentCore: text streams in pieces
        if isinstance(delta, Mapping) and isinstance(delta.get("delta"), Mapping):
            text = delta["delta"].get("text")
            if isinstance(text, str):
                self._say(text if self._speaking else f"agent> {text}")
                self._speaking = True
        elif "messageStop" in event and self._speaking:
            self._say("\n")
            self._speaking = False

    def _say(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()


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


def run_demo(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the demo session and print a summary; the exit code says whether it ended well."""
    out = out if out is not None else sys.stdout
    handler = DemoTools(out)
    if args.provider == "agentcore":
        result = _run_agentcore(args, handler, out)
    elif args.agent_id or args.environment_id:
        if not (args.agent_id and args.environment_id and os.environ.get("ANTHROPIC_API_KEY")):
            out.write("the real API needs ANTHROPIC_API_KEY, --agent-id and --environment-id\n")
            return 2
        result = _run_claude(args, handler, out)
    else:
        result = _run_claude_emulator(args, handler, out)
    _summarise(result, out)
    return 0 if result.terminal == "end_turn" else 1


def _script(turn: Any, call: Any) -> list[Any]:
    """The scripted agent of both emulators: look up two cities, then report."""
    return [
        turn(
            text="Let me look up both cities.",
            tool_calls=[call("get_weather", city="Paris"), call("get_weather", city="Tokyo")],
            usage=(412, 58),
        ),
        turn(
            text=lambda results: "Here is the weather: " + "; ".join(results) + ".", usage=(530, 41)
        ),
    ]


def _run_claude(args: argparse.Namespace, handler: Tools, out: TextIO) -> SessionResult:
    from req_managed_agents._session import run_to_completion
    from req_managed_agents.providers import ClaudeManagedAgents

    out.write("Running against the Claude Managed Agents API.\n")
    with ClaudeManagedAgents() as provider:
        return run_to_completion(
            provider,
            args.prompt,
            handler=handler,
            timeout=args.timeout,
            agent_id=args.agent_id,
            environment_id=args.environment_id,
        )


def _run_claude_emulator(args: argparse.Namespace, handler: Tools, out: TextIO) -> SessionResult:
    from req_managed_agents._session import run_to_completion
    from req_managed_agents.testing import ClaudeEmulator, Turn, call

    with ClaudeEmulator(_script(Turn, call)) as emulator:
        out.write(f"Running against the built-in emulator at {emulator.base_url} (no network).\n")
        agent_id = emulator.add_agent(name="weather-demo")
        environment_id = emulator.add_environment(name="demo-env")
        with emulator.provider() as provider:
            return run_to_completion(
                provider,
                args.prompt,
                handler=handler,
                timeout=args.timeout,
                agent_id=agent_id,
                environment_id=environment_id,
            )


def _run_agentcore(args: argparse.Namespace, handler: Tools, out: TextIO) -> SessionResult:
    from req_managed_agents._session import run_to_completion
    from req_managed_agents.providers import BedrockAgentCore

    if args.harness_arn:
        out.write("Running against Bedrock AgentCore.\n")
        with BedrockAgentCore() as provider:
            return run_to_completion(
                provider,
                args.prompt,
                handler=handler,
                timeout=args.timeout,
                harness_arn=args.harness_arn,
                tools=handler,
            )
    from req_managed_agents.testing import AgentCoreEmulator, ConverseTurn, call

    with AgentCoreEmulator(_script(ConverseTurn, call)) as emulator:
        out.write(
            f"Running against the built-in AgentCore emulator at {emulator.data_url} "
            "(SigV4-signed, no network).\n"
        )
        harness_arn = emulator.add_harness(name="weather_demo")
        with emulator.provider() as provider:
            return run_to_completion(
                provider,
                args.prompt,
                handler=handler,
                timeout=args.timeout,
                harness_arn=harness_arn,
            )


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
