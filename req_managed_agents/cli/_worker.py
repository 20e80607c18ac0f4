"""``rma worker``: run a Claude self-hosted environment's sandbox on this machine.

It polls the environment's work queue and serves each session: the agent's built-in tool
calls run in ``<workdir>/<session_id>`` (``bash`` inside bubblewrap where it works), custom
tools through ``--tools``. One line per work item goes to standard output as it is done;
how the worker stands (sessions served, what it waits for, items done, time) is a live line
on standard error when that is a terminal, plain lines when it is not. SIGTERM or Ctrl-C
stops it after releasing what it serves (exit 0, or 130 for Ctrl-C).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from req_managed_agents.cli._common import (
    EXIT_API,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STATUS_HELP,
    CliError,
    non_negative_seconds,
    positive_int,
    positive_seconds,
)
from req_managed_agents.cli._mcp import add_mcp_flag, include_servers
from req_managed_agents.display._progress_line import ProgressLine
from req_managed_agents.errors import AuthenticationError, ConfigurationError, NotFoundError
from req_managed_agents.tools._handler import Handler
from req_managed_agents.tools._registry import Tools

__all__ = ["add_command", "run_command"]

_KEY_VARIABLE = "ANTHROPIC_ENVIRONMENT_KEY"
_BASH_LIMITS = ("processes", "address_space", "file_size", "open_files", "cpu_seconds")
_SIZE_SUFFIXES = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}

EPILOG = f"""\
examples:
  export ANTHROPIC_ENVIRONMENT_KEY=...        # the environment's key, from the console
  rma worker --environment-id env_01 --workdir /srv/agents
  rma worker --environment-id env_01 --workdir /srv/agents --tools mytools:tools \\
      --ledger /srv/agents/ledger.json --max-sessions 8

The environment key comes from {_KEY_VARIABLE}, or from the file named by
--environment-key-file (never from a flag's value, which other users could read in
`ps`). ANTHROPIC_BASE_URL says where the API is; the worker needs no API key.

Each session gets its own folder, <workdir>/<session_id> (mode 0700); the built-in
tools cannot leave it, and bash runs confined to it with --sandbox bwrap (auto: where
bubblewrap works, else unconfined with a warning), its processes under limits
(--bash-limit processes=256 --bash-limit address_space=4G, say). --ledger keeps each
tool call to one run across restarts: a restarted worker posts what finished before
instead of running it again.

{EXIT_STATUS_HELP}"""


def add_command(commands: Any) -> None:
    """Register ``rma worker`` on the ``rma`` subparsers."""
    worker = commands.add_parser(
        "worker",
        help="serve a Claude self-hosted environment's sessions on this machine",
        description="Poll a self-hosted environment for work and serve each session's tool "
        "calls here, each session in its own folder, until SIGTERM or Ctrl-C.",
        epilog=EPILOG,
        allow_abbrev=False,  # --environment-key VALUE must not pass for the -file flag
    )
    worker.add_argument("--environment-id", required=True, metavar="ID", help="the environment")
    worker.add_argument(
        "--workdir",
        required=True,
        type=Path,
        metavar="DIR",
        help="where the sessions' folders go (made if missing)",
    )
    worker.add_argument(
        "--environment-key-file",
        type=Path,
        metavar="PATH",
        help=f"read the environment key from this file (default: ${_KEY_VARIABLE})",
    )
    worker.add_argument(
        "--tools",
        metavar="MODULE:ATTR",
        help="the custom tools: a Tools registry or handler importable from the current folder",
    )
    add_mcp_flag(worker)
    worker.add_argument(
        "--ledger",
        type=Path,
        metavar="PATH",
        help="a file store recording every tool call, so a restart runs none twice",
    )
    worker.add_argument(
        "--on-unfinished",
        choices=("error", "rerun", "raise"),
        default="error",
        help="what a call that started before a crash and never finished gets",
    )
    worker.add_argument(
        "--sandbox",
        choices=("auto", "bwrap", "none"),
        default="auto",
        help="where bash runs: bubblewrap, or unconfined",
    )
    worker.add_argument(
        "--network", action="store_true", help="let bash reach the network inside the sandbox"
    )
    worker.add_argument(
        "--bash-limit",
        type=_bash_limit,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a limit of bash's processes, repeatable: processes, address_space, file_size "
        "(bytes; K, M, G suffixes), open_files or cpu_seconds; 'none' lifts one "
        "(default: the toolset's ShellLimits)",
    )
    worker.add_argument(
        "--max-sessions", type=positive_int, default=4, metavar="N", help="sessions at once"
    )
    worker.add_argument(
        "--idle-grace",
        type=non_negative_seconds,
        default=60.0,
        metavar="SECONDS",
        help="how long an idle session keeps its item before it is stopped",
    )
    worker.add_argument(
        "--tool-timeout",
        type=positive_seconds,
        metavar="SECONDS",
        help="how long one custom tool may run (default: no limit)",
    )
    worker.add_argument("--worker-id", metavar="ID", help="this worker's name in the queue stats")


def run_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Serve until SIGTERM (exit 0) or Ctrl-C (exit 130)."""
    out = out if out is not None else sys.stdout
    key = _environment_key(args.environment_key_file)
    with ProgressLine() as line, line.showing_logs():
        return _serve(args, key, out, line)


def _serve(args: argparse.Namespace, key: str, out: TextIO, line: ProgressLine) -> int:
    from req_managed_agents.cli._run import load_handler

    handler = load_handler(args.tools) if args.tools else None
    with ExitStack() as servers:
        if args.mcp:
            handler = include_servers(handler or Tools(), args.mcp, servers)
        return _serve_with(args, key, out, line, handler)


def _serve_with(
    args: argparse.Namespace, key: str, out: TextIO, line: ProgressLine, handler: Handler | None
) -> int:
    from req_managed_agents.providers import ClaudeManagedAgents
    from req_managed_agents.toolset import DEFAULT_SHELL_LIMITS
    from req_managed_agents.worker import EnvironmentWorker, WorkItemReport

    ledger = None
    if args.ledger is not None:
        from req_managed_agents.drivers._ledger import ToolLedger
        from req_managed_agents.stores import FileStore

        ledger = ToolLedger(FileStore(args.ledger))

    def report(item: WorkItemReport) -> None:
        detail = f"{item.detail}; " if item.detail else ""
        line.write_line(
            f"{item.work_id} session {item.session_id}: {item.outcome} ({detail}"
            f"{item.runs} runs, {item.tool_calls} tool calls, {item.duration:.1f} s)",
            out,
        )

    # The worker acts with the environment key and each item's token only, so the provider
    # is built on the environment key: a worker host needs no API key.
    with ClaudeManagedAgents(key) as provider:
        worker = EnvironmentWorker(
            provider,
            args.environment_id,
            environment_key=key,
            handler=handler,
            workdir=args.workdir,
            sandbox=args.sandbox,
            network=args.network,
            limits=replace(DEFAULT_SHELL_LIMITS, **dict(args.bash_limit)),
            max_sessions=args.max_sessions,
            ledger=ledger,
            on_unfinished=args.on_unfinished,
            idle_grace=args.idle_grace,
            worker_id=args.worker_id,
            tool_timeout=args.tool_timeout,
            on_item=report,
            progress=line,
        )
        sandbox = worker.settings.sandbox or "the --tools handler"
        line.write_line(
            f"rma worker: serving {args.environment_id} in {worker.settings.workdir} "
            f"(bash: {sandbox}); SIGTERM or Ctrl-C stops it"
        )
        try:
            received = worker.serve_forever()
        except AuthenticationError as exc:
            raise CliError(
                str(exc),
                hint=f"check {_KEY_VARIABLE}: the environment's key, not the API key",
                code=EXIT_API,
            ) from None
        except NotFoundError as exc:
            raise CliError(str(exc), hint="check --environment-id", code=EXIT_API) from None
    line.close()
    line.write_line("rma worker: stopped; every served item released")
    return EXIT_INTERRUPTED if received == signal.SIGINT else EXIT_OK


def _bash_limit(text: str) -> tuple[str, int | None]:
    """One ``--bash-limit NAME=VALUE``: a field of ShellLimits and a whole number (a K, M
    or G suffix multiplies by 1024 once, twice, thrice) or ``none``; ShellLimits checks
    the value's range."""
    name, _, value = text.partition("=")
    if name not in _BASH_LIMITS:
        raise argparse.ArgumentTypeError(
            f"{name!r} is not one of {', '.join(_BASH_LIMITS)} (give NAME=VALUE)"
        )
    if value.lower() == "none":
        return name, None
    scale = _SIZE_SUFFIXES.get(value[-1:].upper(), 1)
    digits = value[:-1] if scale > 1 else value
    if not (digits.isascii() and digits.isdigit()):
        raise argparse.ArgumentTypeError(f"{name}: not a whole number or 'none': {value!r}")
    return name, int(digits) * scale


def _environment_key(path: Path | None) -> str:
    """The key from ``--environment-key-file``, else from the environment."""
    if path is None:
        key = os.environ.get(_KEY_VARIABLE, "").strip()
        if not key:
            raise ConfigurationError(f"no environment key: set {_KEY_VARIABLE}")
        return key
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise CliError(
            f"--environment-key-file {path}: {exc.strerror or exc}",
            hint="name a readable file holding the environment key",
        ) from None
    if not text:
        raise CliError(
            f"--environment-key-file {path} is empty", hint="put the environment key in it"
        )
    return text
