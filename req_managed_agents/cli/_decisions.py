"""The decisions store on the command line: ``--decisions PATH`` (a ``FileStore``, for one
machine) or ``--decisions redis://...`` (a ``RedisStore``, for many), where a run that stops
for a person keeps its questions and ``rma pending`` finds them; and ``--confirm`` /
``--elicit``, the policies of ``rma run`` and ``rma batch`` for questions nothing else
answers (``defer``: leave them to a person)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from req_managed_agents.cli._common import CliError

__all__ = ["add_decisions_flag", "add_policy_flags", "decision_options", "open_decisions"]

_CONFIRMS = ("raise", "allow", "deny", "defer")
_ELICITS = ("raise", "accept", "decline", "cancel", "defer")
_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def add_decisions_flag(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """``--decisions PATH|URL``."""
    parser.add_argument(
        "--decisions",
        required=required,
        metavar="PATH|URL",
        help="the decisions store: a file store's path (one machine) or a redis:// URL "
        "(many); a run that stops for a person keeps its questions there",
    )


def add_policy_flags(parser: argparse.ArgumentParser) -> None:
    """``--decisions``, ``--confirm`` and ``--elicit``, for ``rma run`` and ``rma batch``."""
    add_decisions_flag(parser, required=False)
    parser.add_argument(
        "--confirm",
        choices=_CONFIRMS,
        help="a tool asking permission that --tools does not answer: fail, allow, deny, or "
        "defer to a person (needs --decisions) (default: raise)",
    )
    parser.add_argument(
        "--elicit",
        choices=_ELICITS,
        help="an MCP server's question for a person that --tools does not answer: fail, "
        "answer it, or defer it (needs --decisions) (default: raise)",
    )


def decision_options(args: argparse.Namespace) -> dict[str, Any]:
    """The session options the flags give: ``decisions``, ``confirm``, ``elicit``."""
    options: dict[str, Any] = {}
    for dest in ("confirm", "elicit"):
        policy = getattr(args, dest)
        if policy is None:
            continue
        if policy == "defer" and not args.decisions:
            raise CliError(
                f"--{dest} defer needs --decisions",
                hint="add --decisions PATH (or a redis:// URL): the questions wait there",
            )
        options[dest] = policy
    if args.decisions:
        options["decisions"] = open_decisions(args.decisions, must_exist=False)
    return options


def open_decisions(where: str, *, must_exist: bool) -> Any:
    """The store ``--decisions`` names. A file store that must exist and does not is the
    command line's mistake: a mistyped path would read as a store where nothing waits."""
    if where.startswith(_REDIS_SCHEMES):
        from req_managed_agents.stores import RedisStore

        return RedisStore(where)
    if "://" in where:
        raise CliError(
            f"--decisions {where!r}: not a path nor a redis://, rediss:// or unix:// URL",
            hint="for example --decisions ./decisions or --decisions redis://localhost:6379/0",
        )
    from req_managed_agents.stores import FileStore

    path = Path(where)
    records = path.with_name(path.name + ".records")  # where a FileStore keeps its records
    if must_exist and not (path.exists() or records.exists()):
        raise CliError(
            f"the decisions store {where} does not exist",
            hint="check --decisions: a run given --decisions makes it when it stops for a person",
        )
    return FileStore(path)
