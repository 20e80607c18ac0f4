"""``rma batch``: every prompt of a JSON Lines file, each in a session of its own.

A thin shell over :func:`req_managed_agents.run_batch`: the connection flags are
``rma run``'s, the output is appended as each prompt finishes, and running the same command
again after a crash or Ctrl-C skips what already succeeded.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from typing import Any, TextIO

from req_managed_agents.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_STATUS_HELP,
    CliError,
    open_provider,
    positive_int,
)
from req_managed_agents.cli._connect import add_connection_flags, aws_region, connect_options
from req_managed_agents.cli._decisions import add_policy_flags, decision_options
from req_managed_agents.cli._mcp import include_servers
from req_managed_agents.cli._run import load_handler
from req_managed_agents.display._progress_line import ProgressLine
from req_managed_agents.tools._registry import Tools

__all__ = ["add_command", "run_command"]

DEFAULT_WORKERS = 4

EPILOG = f"""\
INPUT holds one JSON object per line: {{"prompt": "...", "id": "..."}} (the id is optional:
the line number names a prompt without one). Each outcome is appended to OUTPUT as one JSON
line with the id and either terminal, text, session_id, turns and usage, or error. Run the
same command again to resume: prompts that succeeded are skipped, failed ones tried again.
The exit status is 0 when every prompt succeeded, 1 when some failed.

{EXIT_STATUS_HELP}"""


def add_command(commands: Any) -> None:
    """Register ``rma batch`` on the ``rma`` subparsers."""
    batch = commands.add_parser(
        "batch",
        help="run every prompt of a JSON Lines file, a few at a time, resumably",
        description="Run each prompt of INPUT in a session of its own, appending each outcome "
        "to OUTPUT as it finishes.",
        epilog=EPILOG,
    )
    batch.add_argument("input", metavar="INPUT", help="the prompts, one JSON object per line")
    batch.add_argument(
        "-o", "--output", required=True, metavar="OUTPUT", help="where outcomes are appended"
    )
    batch.add_argument(
        "--workers",
        type=positive_int,
        default=DEFAULT_WORKERS,
        metavar="N",
        help="how many prompts run at once",
    )
    add_connection_flags(batch)
    add_policy_flags(batch)
    batch.set_defaults(session_id=None)


def run_command(args: argparse.Namespace, err: TextIO | None = None) -> int:
    """Run ``rma batch``: 0 when every prompt succeeded, 1 when some failed. ``err`` is
    where progress goes (default: standard error)."""
    from req_managed_agents.drivers._batch import read_prompts, run_batch
    from req_managed_agents.errors import ConfigurationError

    connect = {**connect_options(args), **decision_options(args)}
    try:
        items = read_prompts(args.input)
    except FileNotFoundError:
        raise CliError(
            f"the batch input {args.input} does not exist", hint="check the INPUT path"
        ) from None
    except ConfigurationError as exc:
        raise CliError(str(exc), hint="rma batch --help describes the input") from None
    handler = load_handler(args.tools) if args.tools else Tools()
    with (
        ExitStack() as servers,
        open_provider(args.provider, aws_region(args), args.profile) as provider,
        ProgressLine(err) as line,
        line.showing_logs(),
    ):
        outcomes = run_batch(
            provider,
            items,
            handler=include_servers(handler, args.mcp, servers),
            max_workers=args.workers,
            output=args.output,
            progress=line,
            timeout=args.timeout,
            **connect,
        )
    failed = sum(outcome.error is not None for outcome in outcomes)
    sys.stdout.write(f"{len(outcomes) - failed} of {len(outcomes)} prompts succeeded\n")
    return EXIT_FAILED if failed else EXIT_OK
