"""``rma``: the command-line entry point (argparse only, so it starts fast)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from req_managed_agents._version import __version__
from req_managed_agents.errors import ManagedAgentsError

# What shells report for a command stopped by Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE


def build_parser() -> argparse.ArgumentParser:
    """The ``rma`` argument parser; subcommands register here."""
    parser = argparse.ArgumentParser(
        prog="rma",
        description="Drive managed agent sessions whose custom tools run on this machine.",
    )
    parser.add_argument("--version", action="version", version=f"rma {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="run a session whose tool runs locally (built-in emulator unless told otherwise)",
        description="Run one agent session that calls a local tool, streaming the agent's text.",
    )
    from req_managed_agents import _cli_artifacts, _cli_provisioning, _demo

    _demo.add_arguments(demo)
    _cli_provisioning.add_commands(commands)
    _cli_artifacts.add_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``rma`` with ``argv`` (default: the process arguments); return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return _run_command(args)
    except BrokenPipeError:
        # The reader went away (``rma ... | head``): stop quietly, as other tools do, and keep
        # the interpreter's final flush from complaining again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        # The session has already stopped the run (remote turn included) on its way out.
        print("rma: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (ManagedAgentsError, ValueError) as exc:
        print(f"rma: {exc}", file=sys.stderr)
        return 1


def _run_command(args: argparse.Namespace) -> int:
    if args.command == "demo":
        from req_managed_agents._demo import run_demo

        return run_demo(args)
    from req_managed_agents import _cli_artifacts, _cli_provisioning

    if args.command in _cli_provisioning.COMMANDS:
        return _cli_provisioning.run_command(args)
    if args.command == "artifacts":
        return _cli_artifacts.run_command(args)
    raise AssertionError(f"unhandled command {args.command!r}")


if __name__ == "__main__":
    sys.exit(main())
