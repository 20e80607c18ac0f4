"""``rma``: the command-line entry point (argparse only, so it starts fast)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from req_managed_agents._version import __version__


def build_parser() -> argparse.ArgumentParser:
    """The ``rma`` argument parser; subcommands register here."""
    parser = argparse.ArgumentParser(
        prog="rma",
        description="Drive managed agent sessions whose custom tools run on this machine.",
    )
    parser.add_argument("--version", action="version", version=f"rma {__version__}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``rma`` with ``argv`` (default: the process arguments); return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
