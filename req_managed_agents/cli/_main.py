"""``rma``: the command-line entry point (argparse only, so it starts fast).

Every failure ends the same way: one ``rma: MESSAGE (hint: HINT)`` line on standard error
and an exit status from :data:`~req_managed_agents.cli._exits.EXIT_STATUSES` (the README's
table), never a traceback; :func:`~req_managed_agents.cli._exits.describe` decides which.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Sequence

from req_managed_agents import __version__
from req_managed_agents.cli._common import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    CliError,
    Parser,
)
from req_managed_agents.cli._exits import EXIT_STATUS_HELP, Failure, describe, in_flag_terms

__all__ = ["build_parser", "in_flag_terms", "main"]

# The provider a command talks to when it has no --provider flag (for its hints).
_COMMAND_PROVIDERS = {"harnesses": "agentcore", "worker": "worker"}


def build_parser() -> argparse.ArgumentParser:
    """The ``rma`` argument parser; subcommands register here."""
    parser = Parser(
        prog="rma",
        description="Drive managed agent sessions whose custom tools run on this machine.",
        epilog=EXIT_STATUS_HELP,
    )
    parser.add_argument("--version", action="version", version=f"rma {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    from req_managed_agents.cli import (
        _artifacts,
        _batch,
        _demo,
        _emulator,
        _harnesses,
        _pending,
        _provisioning,
        _run,
        _worker,
    )

    _demo.add_command(commands)
    _emulator.add_command(commands)
    _run.add_command(commands)
    _batch.add_command(commands)
    _provisioning.add_commands(commands)
    _artifacts.add_command(commands)
    _harnesses.add_command(commands)
    _worker.add_command(commands)
    _pending.add_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``rma`` with ``argv`` (default: the process arguments); return the exit code."""
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:
        failure = describe(exc, "rma", "claude")
        _print_error(failure.message, failure.hint)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``rma ... | head``): stop quietly, as other tools do, and keep
        # the interpreter's final flush from complaining again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    command, provider = "rma", "claude"
    args: argparse.Namespace | None = None
    try:
        try:
            args, unknown = parser.parse_known_args(argv)
            if args.command is None:
                if unknown:
                    raise CliError(
                        f"unrecognized arguments: {' '.join(unknown)}"
                        f"{_closest(parser, unknown[0])}",
                        hint="rma --help lists the commands and options",
                    )
                raise CliError("no command given", hint="rma --help lists the commands")
            command = " ".join(["rma", args.command, *([args.action] if "action" in args else [])])
            if unknown:
                raise CliError(
                    f"unrecognized arguments: {' '.join(unknown)}",
                    hint=f"{command} --help shows the usage",
                )
        except SystemExit as exit_:  # --help and --version print, then exit
            return exit_.code if isinstance(exit_.code, int) else EXIT_OK
        except CliError as exc:
            _refused_run_json(argv, describe(exc, command, provider))
            raise
        return _run_command(args)
    except BrokenPipeError:
        raise
    except Exception as exc:
        if args is not None:  # read late: rma teardown NAME learns it from the store
            provider = getattr(args, "provider", None) or _COMMAND_PROVIDERS.get(
                args.command, "claude"
            )
        failure = describe(exc, command, provider)
        _print_error(failure.message, failure.hint)
        return failure.status


def _refused_run_json(argv: Sequence[str] | None, failure: Failure) -> None:
    """``rma run --json`` whose command line is refused still prints its one object (a
    ``--json`` before ``--`` cannot be anything but the flag)."""
    words = list(sys.argv[1:] if argv is None else argv)
    words = words[: words.index("--")] if "--" in words else words
    if words[:1] == ["run"] and "--json" in words:
        from req_managed_agents.cli._output import run_json

        report = run_json(failure.status, None, None, [], None, failure.json())
        print(json.dumps(report), flush=True)


def _closest(parser: argparse.ArgumentParser, given: str) -> str:
    """`` (did you mean --version?)`` for a misspelt top-level option or command."""
    known: list[str] = []
    for action in parser._actions:  # argparse keeps no public list of them
        known += action.option_strings
        if isinstance(action, argparse._SubParsersAction):
            known += list(action.choices)
    close = difflib.get_close_matches(given, known, n=1, cutoff=0.7)
    return f" (did you mean {close[0]}?)" if close else ""


def _print_error(message: str, hint: str | None = None) -> None:
    """One line, whatever the message holds (a server's error text may span lines)."""
    line = " ".join(in_flag_terms(message).split())
    if hint:
        line = f"{line} (hint: {hint})"
    print(f"rma: {line}", file=sys.stderr, flush=True)


def _run_command(args: argparse.Namespace) -> int:
    if args.command == "demo":
        from req_managed_agents.cli._demo import run_demo

        return run_demo(args)
    if args.command == "emulator":
        from req_managed_agents.cli._emulator import run_command as run_emulator_command

        return run_emulator_command(args)
    if args.command == "run":
        from req_managed_agents.cli._run import run_command

        return run_command(args)
    if args.command == "worker":
        from req_managed_agents.cli._worker import run_command as run_worker_command

        return run_worker_command(args)
    if args.command == "batch":
        from req_managed_agents.cli._batch import run_command as run_batch_command

        return run_batch_command(args)
    if args.command == "pending":
        from req_managed_agents.cli._pending import run_command as run_pending_command

        return run_pending_command(args)
    from req_managed_agents.cli import _artifacts, _harnesses, _provisioning

    if args.command in _provisioning.COMMANDS:
        return _provisioning.run_command(args)
    if args.command == "artifacts":
        return _artifacts.run_command(args)
    if args.command == "harnesses":
        return _harnesses.run_command(args)
    raise AssertionError(f"unhandled command {args.command!r}")


if __name__ == "__main__":
    sys.exit(main())
