"""``rma pending list|show|approve|deny|answer|expire``: the decisions runs left for a person.

A run given ``--decisions`` (and ``--confirm defer``, ``--elicit defer``, or a tool that
answers ``Deferred``) stops with its questions in that store; these commands list them and
answer them from any process and machine that shares it. An answer continues the session to
its next stop, like ``rma run`` (its tools run here: the same ``--tools`` and ``--mcp``),
on the runtime the decision names. The first answer wins; a second exits 5, naming it.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from contextlib import ExitStack
from typing import Any, TextIO

from req_managed_agents.cli._common import (
    AWS_PROVIDERS,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_STATUS_HELP,
    RUN_PROVIDERS,
    CliError,
    add_profile_flag,
    harness_region,
    open_provider,
    positive_seconds,
    print_json,
    refuse,
    sandbox_region,
)
from req_managed_agents.cli._connect import DEFAULT_TIMEOUT, gemini_flags
from req_managed_agents.cli._decision_view import (
    answering_command,
    decision_json,
    decision_lines,
    said,
)
from req_managed_agents.cli._decisions import add_decisions_flag, open_decisions
from req_managed_agents.cli._exits import describe, resumable
from req_managed_agents.cli._mcp import add_mcp_flag, include_servers
from req_managed_agents.cli._output import Display, run_json, summary, write_json_line
from req_managed_agents.model._stream import (
    MessageDone,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from req_managed_agents.model._vocabulary import PendingDecision, SessionResult

__all__ = ["add_command", "run_command"]

_ANSWERS = ("approve", "deny", "answer")

EPILOG = f"""\
examples:
  rma run --agent-id agent_01 --environment-id env_01 --confirm defer \\
      --decisions ./decisions "Clean the build folder"
  rma pending list --decisions ./decisions
  rma pending approve TOKEN --decisions ./decisions
  rma pending deny TOKEN --message "not on a Friday" --decisions redis://localhost:6379/0
  rma pending answer TOKEN --result "refunded" --tools mytools:tools --decisions ./decisions
  rma pending expire --decisions ./decisions --tools mytools:tools

approve, deny and answer continue the session on the runtime the decision names, with its
credentials from the environment as rma run reads them, and print what rma run prints
(--json: the same object). A tool the agent calls next runs here (--tools, --mcp).

{EXIT_STATUS_HELP}"""


def add_command(commands: Any) -> None:
    """Register ``rma pending`` on the ``rma`` subparsers."""
    pending = commands.add_parser(
        "pending",
        help="list and answer the decisions runs left for a person",
        description="List the questions runs left in a decisions store, and answer them: "
        "the session goes on to its next stop.",
        epilog=EPILOG,
    )
    actions = pending.add_subparsers(dest="action", metavar="ACTION", required=True)
    one = argparse.ArgumentParser(add_help=False)
    one.add_argument("token", metavar="TOKEN", help="the decision's token, as rma prints it")
    store = argparse.ArgumentParser(add_help=False)
    add_decisions_flag(store, required=True)
    store.add_argument("--json", action="store_true", help="print JSON")
    going_on = argparse.ArgumentParser(add_help=False)
    going_on.add_argument(
        "--tools", metavar="MODULE:ATTR", help="the local tools the session may call next"
    )
    add_mcp_flag(going_on)
    going_on.add_argument(
        "--timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="give up waiting for the session's next stop after this long",
    )
    going_on.add_argument(
        "--region", help="AWS sessions: the region, where the decision does not name it"
    )
    add_profile_flag(going_on)
    listing = actions.add_parser("list", parents=[store], help="the decisions that wait")
    listing.add_argument("--session", metavar="ID", help="only this session's")
    actions.add_parser("show", parents=[one, store], help="one decision, answered or not")
    approve = actions.add_parser(
        "approve", parents=[one, store, going_on], help="allow a tool, or accept a question"
    )
    approve.add_argument(
        "--content", metavar="JSON", help="an MCP server's form: the answers, as a JSON object"
    )
    deny = actions.add_parser(
        "deny", parents=[one, store, going_on], help="deny a tool, or decline a question"
    )
    deny.add_argument("--message", help="a denied tool: why, for the agent")
    result = actions.add_parser(
        "answer", parents=[one, store, going_on], help="give a deferred tool call its result"
    )
    result.add_argument("--result", required=True, metavar="TEXT", help="the tool's result")
    result.add_argument("--error", action="store_true", help="the result is an error")
    expire = actions.add_parser(
        "expire", parents=[store, going_on], help="answer every expired decision with no"
    )
    expire.add_argument(
        "--message",
        help="what a denied tool and a deferred tool's error result say (default: that no "
        "one answered before the decision expired)",
    )


def run_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``rma pending ACTION``; with ``--json`` a failure prints one object too."""
    out = out if out is not None else sys.stdout
    command = _Pending(args, out)
    try:
        return command.run()
    except Exception as exc:
        if args.json and not isinstance(exc, BrokenPipeError):
            command.report_failure(exc)
        raise


class _Pending:
    """One ``rma pending`` command, and what its failure report needs."""

    def __init__(self, args: argparse.Namespace, out: TextIO) -> None:
        self.args = args
        self.out = out
        self.decision: PendingDecision | None = None

    def run(self) -> int:
        args = self.args
        store = open_decisions(args.decisions, must_exist=True)
        if args.action == "list":
            return self._list(store)
        if args.action == "expire":
            return self._expire(store)
        from req_managed_agents.drivers._decision_book import DecisionNotFoundError, book_for

        self.decision = book_for(store).get(args.token)
        if self.decision is None:
            raise DecisionNotFoundError(f"no decision {args.token[:8]}... in {store!r}")
        args.provider = self.decision.runtime  # for the hints of a failure
        if args.action == "show":
            return self._show(store, self.decision)
        return self._answer(store, self.decision)

    def _list(self, store: Any) -> int:
        from req_managed_agents.drivers._answer import pending

        waiting = pending(store, session_id=self.args.session)
        if self.args.json:
            print_json([decision_json(d, "waiting") for d in waiting], self.out)
            return EXIT_OK
        for decision in waiting:
            self.out.write("\n".join(decision_lines(decision)) + "\n")
        self.out.write("" if waiting else "no decision waits\n")
        self.out.flush()
        return EXIT_OK

    def _show(self, store: Any, decision: PendingDecision) -> int:
        from req_managed_agents.drivers._decision_book import book_for

        book = book_for(store)
        found = (
            None
            if book.waiting(decision.token)
            else book.lookup(decision.session_id, decision.item_id)
        )
        given = None if isinstance(found, PendingDecision) else found
        status = "waiting" if given is None else "answered"
        if self.args.json:
            print_json(decision_json(decision, status, given), self.out)
            return EXIT_OK
        lines = decision_lines(decision)
        if given is None:
            lines.append(f"  answer with: {answering_command(decision, self.args.decisions)}")
        else:
            lines.append(f"  answered: {said(given)}")
        self.out.write("\n".join(lines) + "\n")
        self.out.flush()
        return EXIT_OK

    def _answer(self, store: Any, decision: PendingDecision) -> int:
        from req_managed_agents.drivers._answer import answer

        reply = _reply(self.args, decision)
        region = _region(self.args, decision)
        result = self._continue(
            decision.runtime,
            region,
            lambda provider, handler: answer(
                provider,
                decision.token,
                handler=handler,
                decisions=store,
                timeout=self.args.timeout,
                **reply,
            ),
        )
        status = EXIT_OK if result.terminal == "end_turn" else EXIT_FAILED
        if self.args.json:
            calls = list(zip(result.tool_uses, result.tool_results))
            resume = self._resume(decision)
            write_json_line(self.out, run_json(status, result, result.session_id, calls, resume))
        else:
            _show_result(self.out, result, self.args.decisions)
        return status

    def _expire(self, store: Any) -> int:
        from req_managed_agents.drivers._answer import expire, pending

        expired = [decision for decision in pending(store) if decision.expired]
        outcomes: dict[str, SessionResult | Exception] = {}
        said_no = {} if self.args.message is None else {"message": self.args.message}
        for runtime in sorted({decision.runtime for decision in expired}):
            of_runtime = [d for d in expired if d.runtime == runtime]
            regions = {_region(self.args, d, refusing=False) for d in of_runtime}
            if len(regions) > 1:
                raise CliError(
                    f"the expired {runtime} decisions are in several regions: "
                    f"{', '.join(sorted(map(str, regions)))}",
                    hint="answer them one by one: rma pending deny TOKEN --region REGION",
                )
            outcomes.update(
                self._continue(
                    runtime,
                    regions.pop(),
                    lambda provider, handler: expire(
                        provider, store, handler=handler, timeout=self.args.timeout, **said_no
                    ),
                )
            )
        failed = any(isinstance(outcome, Exception) for outcome in outcomes.values())
        if self.args.json:
            print_json([self._expired_json(t, o) for t, o in outcomes.items()], self.out)
        else:
            for token, outcome in outcomes.items():
                self.out.write(f"{token}: {self._expired_line(outcome)}\n")
            self.out.write("" if outcomes else "no decision has expired\n")
            self.out.flush()
        return EXIT_FAILED if failed else EXIT_OK

    def _expired_line(self, outcome: SessionResult | Exception) -> str:
        if isinstance(outcome, SessionResult):
            return f"answered no; {summary(outcome)}"
        failure = describe(outcome, "rma pending expire", _provider(self.args))
        return f"answered no, then failed: {failure.message}"

    def _expired_json(self, token: str, outcome: SessionResult | Exception) -> dict[str, Any]:
        if isinstance(outcome, SessionResult):
            status = EXIT_OK if outcome.terminal == "end_turn" else EXIT_FAILED
            calls = list(zip(outcome.tool_uses, outcome.tool_results))
            return {"token": token, **run_json(status, outcome, outcome.session_id, calls, None)}
        failure = describe(outcome, "rma pending expire", _provider(self.args))
        return {"token": token, **run_json(failure.status, None, None, [], None, failure.json())}

    def _continue(self, runtime: str, region: str | None, go_on: Any) -> Any:
        """``go_on(provider, handler)`` with the runtime's provider and the local tools."""
        from req_managed_agents.cli._run import load_handler
        from req_managed_agents.tools._registry import Tools

        if runtime not in RUN_PROVIDERS:
            raise CliError(
                f"the decision belongs to a {runtime} session, which rma cannot continue",
                hint="answer it from Python: req_managed_agents.answer(provider, TOKEN, ...)",
            )
        self.args.provider = runtime
        handler = load_handler(self.args.tools) if self.args.tools else Tools()
        with ExitStack() as servers:
            handler = include_servers(handler, self.args.mcp, servers)
            with open_provider(runtime, region, self.args.profile) as provider:
                return go_on(provider, handler)

    def report_failure(self, exc: Exception) -> None:
        """The one JSON object a failure prints: ``rma run --json``'s for an answer."""
        command = f"rma pending {self.args.action}"
        failure = describe(exc, command, _provider(self.args))
        if self.args.action not in _ANSWERS:
            print_json({"exit_status": failure.status, "error": failure.json()}, self.out)
            return
        decision = self.decision
        resume = self._resume(decision) if decision is not None and resumable(exc) else None
        session_id = decision.session_id if decision is not None else None
        report = run_json(failure.status, None, session_id, [], resume, failure.json())
        write_json_line(self.out, report)

    def _resume(self, decision: PendingDecision | None) -> str | None:
        """The ``rma run`` command line that continues the decision's session."""
        if decision is None or decision.runtime not in RUN_PROVIDERS:
            return None
        args = self.args
        argv = ["rma", "run"]
        if decision.runtime != "claude":
            argv += ["--provider", decision.runtime]
        harness = (decision.connect or {}).get("harness_arn")
        if decision.runtime == "agentcore" and harness:
            argv += ["--harness-arn", str(harness)]
        if decision.runtime == "gemini":
            argv += gemini_flags(decision.connect or {})
        for dest in ("region", "profile", "tools"):
            if getattr(args, dest, None):
                argv += [f"--{dest}", getattr(args, dest)]
        for command in args.mcp:
            argv += ["--mcp", command]
        argv += ["--decisions", args.decisions, "--session-id", decision.session_id]
        return shlex.join(argv)


def _provider(args: argparse.Namespace) -> str:
    """The runtime a failure's hints speak of: the decision's, once it is known."""
    return str(getattr(args, "provider", None) or "claude")


def _show_result(out: TextIO, result: SessionResult, decisions: str) -> None:
    """What ``rma run`` prints of a run, after the fact: the tool calls, the text, the
    summary and the questions that wait."""
    from req_managed_agents.cli._run import show_end

    with Display(out, None) as display:
        for use, outcome in zip(result.tool_uses, result.tool_results):
            display.show(ToolCallStarted(use))
            display.show(ToolCallFinished(use, outcome))
        if result.text:
            display.show(TextDelta(result.text, "final"))
            display.show(MessageDone(result.text, "final"))
    show_end(out, result, decisions)


def _reply(args: argparse.Namespace, decision: PendingDecision) -> dict[str, Any]:
    """``answer()``'s arguments; an answer that does not fit the decision is the command
    line's mistake, refused before anything is claimed or sent."""
    token = decision.token[:8] + "..."
    if args.action == "answer":
        if decision.kind != "tool_result":
            raise CliError(
                f"decision {token} asks for a yes or no ({decision.kind}), not a tool's result",
                hint="rma pending approve TOKEN or rma pending deny TOKEN answers it",
            )
        return {"result": args.result, "is_error": args.error}
    if decision.kind == "tool_result":
        raise CliError(
            f"decision {token} waits for a tool's result, not for a yes or no",
            hint="rma pending answer TOKEN --result TEXT answers it",
        )
    asked = decision.elicitation
    if args.action == "deny":
        if asked is not None and args.message is not None:
            raise CliError(
                "--message goes to the agent with a denied tool; an MCP server's question "
                "is declined without one",
                hint="drop --message",
            )
        return {"allow": False, "message": args.message}
    if args.content is None:
        return {"allow": True}
    if asked is None or asked.requested_schema is None:
        raise CliError(
            f"--content answers an MCP server's form; decision {token} asks no form",
            hint="drop --content",
        )
    try:
        content = json.loads(args.content)
    except ValueError as exc:
        raise CliError(f"--content is not valid JSON: {exc}", hint="give a JSON object") from None
    if not isinstance(content, dict):
        raise CliError("--content must be a JSON object", hint='for example {"name": "Ada"}')
    return {"allow": True, "content": content}


def _region(
    args: argparse.Namespace, decision: PendingDecision, *, refusing: bool = True
) -> str | None:
    """The AWS region of the decision's session: its harness's or sandbox's, else
    ``--region``; the AWS flags are refused for the other runtimes when ``refusing``."""
    if decision.runtime not in AWS_PROVIDERS:
        if not refusing:
            return None
        refuse(
            args,
            ("region", "profile"),
            f"is an AWS option; the decision's session runs on {decision.runtime}",
            "drop it",
        )
        return None
    connect = decision.connect or {}
    if decision.runtime == "agentcore" and connect.get("harness_arn"):
        return harness_region(str(connect["harness_arn"]), args.region)
    if decision.runtime == "claude-bedrock" and connect.get("environment_id"):
        return sandbox_region(str(connect["environment_id"]), args.region)
    region: str | None = args.region
    return region
