"""``rma run``: one prompt against an agent (Claude, on Anthropic's API or Amazon Bedrock;
OpenAI; Gemini) or an AgentCore harness, shown as it runs.

The local tools come from ``--tools MODULE:ATTRIBUTE``, importable from the current folder;
without it the run has none, and a tool call gets the library's unknown-tool error result.
The agent's text, each tool call and its result are printed as they happen, then one summary
line; ``--json`` prints one JSON object at the end instead, for scripts. On a terminal, a
status line ("turn 2 · 1 tool running") is redrawn in place on standard error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
from contextlib import ExitStack
from typing import Any, TextIO

from req_managed_agents.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_STATUS_HELP,
    CliError,
    open_provider,
)
from req_managed_agents.cli._connect import (
    add_connection_flags,
    aws_region,
    connect_options,
    gemini_flags,
)
from req_managed_agents.cli._decision_view import answering_command, question
from req_managed_agents.cli._decisions import add_policy_flags, decision_options
from req_managed_agents.cli._exits import Failure, describe, resumable
from req_managed_agents.cli._mcp import include_servers, show_mapping
from req_managed_agents.cli._output import Display, run_json, summary, write_json_line
from req_managed_agents.model._stream import ToolCallFinished
from req_managed_agents.model._vocabulary import SessionResult, ToolResult, ToolUse
from req_managed_agents.tools._handler import Handler
from req_managed_agents.tools._registry import Tools

__all__ = ["add_command", "load_handler", "run_command", "show_end"]


EPILOG = f"""\
examples:
  rma run --agent-id agent_01 --environment-id env_01 "What is the weather in Paris?"
  rma run --tools mytools:tools --agent-id agent_01 --environment-id env_01 --prompt "..."
  rma run --provider agentcore --harness-arn arn:aws:bedrock-agentcore:...:harness/h-1 "Hi"
  rma run --provider claude-bedrock --agent-id agent_01 --environment-id SANDBOX_ARN "Hi"
  rma run --provider openai --agent-id agent_01 "Hi"
  rma run --provider gemini --agent-id my-agent "Hi"
  rma run --provider gemini --agent-id my-agent --session-id INTERACTION "And?"
  rma run --session-id sesn_01 "And tomorrow?"        # a follow-up in the same session
  echo "Hi" | rma run --agent-id agent_01 --environment-id env_01 --json -

--tools MODULE:ATTRIBUTE names a Tools registry (or any object with
handle_tool_call(name, input, context)) in a module importable from the current folder,
e.g. --tools mytools:tools for `tools = Tools()` in mytools.py. For AgentCore, a Tools
registry's tools are declared to the harness on each invocation.

Claude reads ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL); AgentCore the AWS credential
chain (AWS_ACCESS_KEY_ID, AWS_PROFILE or --profile, ...), in the region of the harness
ARN; Claude on Bedrock the same chain (or AWS_BEARER_TOKEN_BEDROCK), in the region of
the sandbox ARN; OpenAI reads OPENAI_API_KEY (and OPENAI_BASE_URL); Gemini reads
GOOGLE_API_KEY, else GEMINI_API_KEY (and GOOGLE_GEMINI_BASE_URL). A Gemini session id
is the conversation's newest interaction: each turn makes a new one.

--json prints one object whatever the outcome, with every key each time: exit_status,
session_id, terminal, stop_reason ({{"type": ...}} or null), text, turns, usage,
tool_calls (id, name, input, result, is_error), error ({{"type", "message", "hint"}} or
null) and resume (the rma run command that continues the session, or null).

{EXIT_STATUS_HELP}"""


def add_command(commands: Any) -> None:
    """Register ``rma run`` on the ``rma`` subparsers."""
    run = commands.add_parser(
        "run",
        help="run a prompt against a Claude, OpenAI or Gemini agent or an AgentCore harness",
        description="Run one prompt to the end of the agent's turn, with local tools, "
        "showing the agent's text and each tool call as they happen.",
        epilog=EPILOG,
    )
    run.add_argument(
        "prompt_text",
        nargs="?",
        metavar="PROMPT",
        help="what to ask the agent; - reads it from standard input",
    )
    run.add_argument("--prompt", help="what to ask the agent (instead of PROMPT)")
    run.add_argument(
        "--session-id",
        metavar="ID",
        help="continue this session instead of starting one (AgentCore: the runtime "
        "session id; Gemini: the newest interaction); without a prompt it finishes what "
        "the session was doing",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object at the end")
    run.add_argument(
        "--verbose",
        action="store_true",
        help="say on standard error which MCP server tool each declared tool name calls",
    )
    add_connection_flags(run)
    add_policy_flags(run)


def run_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``rma run``: 0 when the agent ended its turn, 1 when the run ended otherwise.
    The status line goes to standard error, and only when that is a terminal. With
    ``--json`` every outcome, failures included, prints one object."""
    out = out if out is not None else sys.stdout
    run = _Run(args)
    try:
        result = run.drive(out)
    except BaseException as exc:
        failure, resume = run.failure(exc)
        if args.json:
            session_id = run.session_id()
            error = failure.json()
            write_json_line(
                out, run_json(failure.status, None, session_id, run.tool_calls, resume, error)
            )
        if not isinstance(exc, Exception) or isinstance(exc, BrokenPipeError):
            raise  # Ctrl-C and a reader gone: main() reports them
        raise CliError(failure.message, hint=failure.hint, code=failure.status) from exc
    status = EXIT_OK if result.terminal == "end_turn" else EXIT_FAILED
    if args.json:
        calls = list(zip(result.tool_uses, result.tool_results))
        write_json_line(out, run_json(status, result, result.session_id, calls, run.resume()))
    else:
        show_end(out, result, args.decisions)
    return status


def show_end(out: TextIO, result: SessionResult, decisions: str | None) -> None:
    """The summary line, then each question the run left for a person and the command
    that answers it."""
    out.write(summary(result) + "\n")
    for decision in result.pending:
        why = f" ({decision.reason})" if decision.reason else ""
        out.write(f"pending {decision.token}: {question(decision)}{why}\n")
        out.write(f"  {answering_command(decision, decisions or 'PATH')}\n")
    out.flush()


class _Run:
    """One ``rma run``: drives the session, and keeps what a failure's report needs (the
    session, the tool calls that finished, where to resume)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.session: Any = None
        self.region: str | None = None
        self.tool_calls: list[tuple[ToolUse, ToolResult]] = []

    def drive(self, out: TextIO) -> SessionResult:
        args = self.args
        status = sys.stderr if sys.stderr.isatty() else None
        connect = {**connect_options(args), **decision_options(args)}
        prompt = _prompt(args)
        handler = load_handler(args.tools) if args.tools else Tools()
        with ExitStack() as servers:
            handler = include_servers(handler, args.mcp, servers)
            if args.verbose and isinstance(handler, Tools):
                show_mapping(handler, sys.stderr)
            return self._stream(out, status, connect, prompt, handler)

    def _stream(
        self,
        out: TextIO,
        status: TextIO | None,
        connect: dict[str, Any],
        prompt: str | None,
        handler: Handler,
    ) -> SessionResult:
        args = self.args
        from req_managed_agents.drivers._session import Session

        result: SessionResult | None = None
        with open_provider(args.provider, aws_region(args), args.profile) as provider:
            self.region = getattr(provider, "region", None)
            self.session = session = Session(provider, handler=handler, **connect)
            with session, Display(None if args.json else out, status) as display:
                for item in session.stream(prompt, timeout=args.timeout):
                    if isinstance(item, SessionResult):
                        result = item
                    else:
                        if isinstance(item, ToolCallFinished):
                            self.tool_calls.append((item.tool_use, item.result))
                        display.show(item)
        assert result is not None, "a stream always ends with its SessionResult"
        return result

    def session_id(self) -> str | None:
        """The session the run was about: the one it made or continued, else the one named."""
        known = self.session.session_id if self.session is not None else None
        return known or self.args.session_id or None

    def resume(self) -> str | None:
        """The ``rma run`` command line that continues the session (None: there is none)."""
        session_id = self.session_id()
        if session_id is None:
            return None
        args = self.args
        argv = ["rma", "run"]
        if args.provider != "claude":
            argv += ["--provider", args.provider]
        if args.provider == "agentcore":
            argv += ["--harness-arn", args.harness_arn]
        if args.provider == "claude-bedrock" and self.region:
            argv += ["--region", self.region]  # a session id names no region
        if args.provider == "gemini":  # every interaction of the chain repeats them
            argv += gemini_flags(connect_options(args))
        for dest in ("profile", "tools", "decisions", "confirm", "elicit"):
            if getattr(args, dest):
                argv += [f"--{dest}", getattr(args, dest)]
        for command in args.mcp:
            argv += ["--mcp", command]
        return shlex.join([*argv, "--session-id", session_id])

    def failure(self, exc: BaseException) -> tuple[Failure, str | None]:
        """How the run failed, and the command that resumes it where resuming may help."""
        resume = self.resume() if resumable(exc) else None
        return describe(exc, "rma run", self.args.provider, resume), resume


def _prompt(args: argparse.Namespace) -> str | None:
    """The prompt (None: a resumed session only finishes what it was doing)."""
    if args.prompt is not None and args.prompt_text is not None:
        raise CliError(
            "the prompt is given twice, as PROMPT and as --prompt", hint="give one of them"
        )
    prompt: str | None = args.prompt if args.prompt is not None else args.prompt_text
    if prompt == "-" and args.prompt_text is not None:
        prompt = sys.stdin.read()
    if prompt is None:
        if args.session_id:
            return None
        raise CliError(
            "no prompt given",
            hint='rma run ... "What is the weather?" (or --prompt TEXT, or - for standard input)',
        )
    if not prompt.strip():
        raise CliError("the prompt is empty", hint="give the agent something to do")
    return prompt


def load_handler(target: str) -> Handler:
    """The ``--tools MODULE:ATTRIBUTE`` handler, imported from the current folder first."""
    module_name, separator, attribute = target.partition(":")
    if not separator or not module_name or not attribute:
        raise CliError(
            f"--tools takes MODULE:ATTRIBUTE, got {target!r}",
            hint="for example --tools mytools:tools for `tools = Tools()` in mytools.py",
        )
    folder = os.getcwd()
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        value: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module_name + ".").startswith(exc.name + "."):
            raise _import_failed(target, exc) from None
        raise CliError(
            f"--tools: no module named {module_name!r} in {folder} or on the path",
            hint="run rma from the folder holding the module, or install it",
        ) from None
    except Exception as exc:
        raise _import_failed(target, exc) from None
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise CliError(
                f"--tools: {module_name!r} has no attribute {attribute!r}",
                hint=f"define it in {module_name}, e.g. `{attribute} = Tools()`",
            )
        value = getattr(value, part)
    if isinstance(value, type):
        raise CliError(
            f"--tools {target} is a class; name an instance of it",
            hint=f"add `tools = {value.__name__}()` to {module_name} and pass "
            f"--tools {module_name}:tools",
        )
    if not isinstance(value, Handler):
        raise CliError(
            f"--tools {target} is a {type(value).__name__}, not a Tools registry or a handler",
            hint="a handler has handle_tool_call(name, input, context)",
        )
    return value


def _import_failed(target: str, exc: BaseException) -> CliError:
    return CliError(
        f"--tools {target}: importing the module failed: {type(exc).__name__}: {exc}",
        hint="fix the module; python -c 'import MODULE' shows the traceback",
    )
