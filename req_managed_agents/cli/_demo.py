"""``rma demo``: one session whose tool runs on this machine, end to end.

With no agent named it runs against the built-in emulator of ``--provider`` (claude,
claude-bedrock, agentcore, openai or gemini: a real HTTP server on loopback playing a scripted
agent, the one ``rma emulator`` serves), so it works on a fresh clone with no network. Given
an agent (``--agent-id``; for Claude with ``--environment-id``, a sandbox ARN on Bedrock) or
``--harness-arn``, it runs the same code against the real service with the environment's
credentials; the agent must declare a custom tool ``get_weather(city: str)``. The emulators
play a fixed script, so ``--prompt`` only applies to a real agent, and ``--turn-delay`` only
to the emulators.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from req_managed_agents.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_TIMEOUT,
    RUN_PROVIDERS,
    CliError,
    harness_region,
    non_negative_seconds,
    open_provider,
    positive_seconds,
    refuse,
    sandbox_region,
)
from req_managed_agents.cli._emulator import TITLES, emulated
from req_managed_agents.errors import SessionTimeoutError
from req_managed_agents.model._vocabulary import SessionResult
from req_managed_agents.tools._registry import Tools

__all__ = ["add_command", "run_demo"]

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


def add_command(commands: Any) -> None:
    """Register ``rma demo`` and its options."""
    parser = commands.add_parser(
        "demo",
        help="run a session whose tool runs locally (built-in emulator unless told otherwise)",
        description="Run one agent session that calls a local tool, get_weather(city), "
        "streaming the agent's text. Without --agent-id or --harness-arn it "
        "runs on a built-in emulator playing a fixed script (no credentials, no network).",
    )
    parser.add_argument(
        "--provider",
        choices=RUN_PROVIDERS,
        default="claude",
        help="which runtime to emulate or use",
    )
    parser.add_argument(
        "--prompt",
        help=f"real agents only: what to ask (default: {DEMO_PROMPT!r})",
    )
    parser.add_argument(
        "--agent-id",
        metavar="ID",
        help="a real agent declaring get_weather: Claude (with --environment-id and "
        "ANTHROPIC_API_KEY; on Bedrock a sandbox ARN and AWS credentials), OpenAI "
        "(OPENAI_API_KEY) or Gemini (GOOGLE_API_KEY or GEMINI_API_KEY)",
    )
    parser.add_argument(
        "--environment-id",
        metavar="ID",
        help="a real Claude environment, or on Bedrock a sandbox ARN (with --agent-id)",
    )
    parser.add_argument(
        "--harness-arn",
        metavar="ARN",
        help="a real AgentCore harness (with --provider agentcore and AWS credentials)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=300.0,
        metavar="SECONDS",
        help="seconds for the whole run",
    )
    parser.add_argument(
        "--turn-delay",
        type=non_negative_seconds,
        metavar="SECONDS",
        help="built-in emulators only: seconds the scripted agent takes per turn (default: 0)",
    )


def run_demo(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the demo session, showing it as it happens, then a summary; the exit code says
    whether it ended well. A status line goes to standard error when that is a terminal."""
    out = out if out is not None else sys.stdout
    status = sys.stderr if sys.stderr.isatty() else None
    real = _check_flags(args)
    try:
        result = _run_real(args, out, status) if real else _run_emulated(args, out, status)
    except SessionTimeoutError as exc:
        raise CliError(str(exc), hint="raise --timeout", code=EXIT_TIMEOUT) from None
    _summarise(result, out)
    return EXIT_OK if result.terminal == "end_turn" else EXIT_FAILED


def _check_flags(args: argparse.Namespace) -> bool:
    """Whether the demo runs against a real agent; flags that do not apply are refused."""
    provider = args.provider
    if provider == "agentcore":
        refuse(
            args,
            ["agent_id", "environment_id"],
            "does not apply with --provider agentcore (the harness is the agent)",
            "name the harness with --harness-arn, or use another --provider",
        )
        real = args.harness_arn is not None
    else:
        refuse(args, ["harness_arn"], "needs --provider agentcore", "add --provider agentcore")
        if provider in ("openai", "gemini"):
            refuse(
                args,
                ["environment_id"],
                f"does not apply with --provider {provider} (the agent's session needs none)",
                "drop it",
            )
        elif bool(args.agent_id) != bool(args.environment_id):
            where = "a sandbox ARN" if provider == "claude-bedrock" else "ANTHROPIC_API_KEY"
            raise CliError(
                "a real Claude agent needs both --agent-id and --environment-id",
                hint=f"give both (and {where}), or neither for the built-in emulator",
            )
        real = args.agent_id is not None
    if real:
        refuse(
            args,
            ["turn_delay"],
            "only applies to the built-in emulators",
            "drop --turn-delay when running a real agent",
        )
    else:
        refuse(
            args,
            ["prompt"],
            "only applies to a real agent: the built-in emulator plays a fixed script",
            "drop --prompt, or name a real agent with --agent-id or --harness-arn",
        )
    return real


def _show(
    provider: Any, args: argparse.Namespace, out: TextIO, status: TextIO | None, **connect: Any
) -> SessionResult:
    """Stream one run: the agent's text as it is written, each tool call as it runs."""
    from req_managed_agents.cli._output import Display
    from req_managed_agents.drivers._session import Session

    prompt = args.prompt or DEMO_PROMPT
    with Session(provider, handler=demo_tools(), **connect) as session, Display(out, status) as d:
        for item in session.stream(prompt, timeout=args.timeout):
            if isinstance(item, SessionResult):
                return item
            d.show(item)
    raise AssertionError("a stream always ends with its SessionResult")


def _run_real(args: argparse.Namespace, out: TextIO, status: TextIO | None) -> SessionResult:
    """The demo against the service, with the agent (or harness) the flags name."""
    kind: str = args.provider
    connect: dict[str, Any] = {"agent_id": args.agent_id}
    region = None
    if kind == "agentcore":
        region = harness_region(args.harness_arn, None)
        connect = {"harness_arn": args.harness_arn, "tools": demo_tools()}
    elif kind == "gemini":
        connect = {"agent": args.agent_id}
    elif kind != "openai":
        connect["environment_id"] = args.environment_id
        if kind == "claude-bedrock":
            region = sandbox_region(args.environment_id, None)
    with open_provider(kind, region) as provider:
        where = getattr(getattr(provider, "client", None), "base_url", None)
        out.write(f"Running against {TITLES[kind]}{f' at {where}' if where else ''}.\n")
        return _show(provider, args, out, status, **connect)


def _run_emulated(args: argparse.Namespace, out: TextIO, status: TextIO | None) -> SessionResult:
    """The demo on the built-in emulator of ``--provider``."""
    with emulated(args.provider, delay=args.turn_delay or 0.0) as running:
        url = next(v for v in running.variables.values() if v.startswith("http://"))
        out.write(
            f"Running against the built-in emulator of {TITLES[args.provider]} at {url} "
            "(no network).\n"
        )
        with running.emulator.provider() as provider:
            return _show(provider, args, out, status, **running.connect)


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
