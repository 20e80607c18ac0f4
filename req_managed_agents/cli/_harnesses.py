"""``rma harnesses list [--prefix P]`` and ``rma harnesses sweep --prefix P``: the AgentCore
harnesses of an account, and a clean-up for CI jobs that leave theirs behind.

A prefix ``P`` matches the names ``P_...`` only (harness names are content-addressed as
``name_digest``, so ``ci`` must not sweep ``ci2_...``). The sweep reads each harness's
status first: ``READY`` and ``*_FAILED`` ones are deleted, ``DELETING`` ones are already on
their way, ``CREATING`` and ``UPDATING`` ones are left (a delete would conflict). Deletion is
asynchronous, so the sweep then re-lists until every deleted harness is gone or ``--timeout``
runs out; one still ``DELETING`` then is reported ``unconfirmed``, one ``DELETE_FAILED`` as
``failed``. It prints one JSON object per harness and exits 0 only when all are gone.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from typing import Any, TextIO

from req_managed_agents.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    CliError,
    add_profile_flag,
    open_provider,
    print_json,
)
from req_managed_agents.errors import ConflictError, NotFoundError
from req_managed_agents.transport._backoff import RetryPolicy

__all__ = ["add_command", "run_command"]

# Re-lists while deletions settle: 0.5 s doubling to 5 s.
SETTLE_POLL = RetryPolicy.poll(5.0, first=0.5)
DEFAULT_SETTLE_TIMEOUT = 120.0
_PREFIX = re.compile(r"[a-zA-Z][a-zA-Z0-9_]{0,38}")
_DELETABLE = frozenset({"READY", "CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED"})


def add_command(commands: Any) -> None:
    """Register ``rma harnesses`` on the ``rma`` subparsers."""
    harnesses = commands.add_parser("harnesses", help="list or sweep AgentCore harnesses")
    actions = harnesses.add_subparsers(dest="action", metavar="ACTION", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--region", help="the AWS region (default: the AWS configuration's)")
    add_profile_flag(common)
    listing = actions.add_parser(
        "list",
        parents=[common],
        help="the harnesses, as JSON",
        description="List the account's harnesses (name, id, status), every page.",
    )
    listing.add_argument("--prefix", help="only the harnesses named PREFIX_...")
    sweep = actions.add_parser(
        "sweep",
        parents=[common],
        help="delete the harnesses named PREFIX_...",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sweep.add_argument("--prefix", required=True, help="delete the harnesses named PREFIX_...")
    sweep.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_SETTLE_TIMEOUT,
        help=f"seconds to wait for deletions to settle (default {DEFAULT_SETTLE_TIMEOUT:g})",
    )


def run_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``rma harnesses``; returns the exit code."""
    out = out if out is not None else sys.stdout
    matches = _matcher(args.prefix)
    if args.action == "sweep" and not args.timeout > 0:
        raise CliError("--timeout must be positive", hint="rma harnesses sweep --timeout 120")
    with open_provider("agentcore", args.region, args.profile) as provider:
        client = provider.client
        found = [h for h in client.list_harnesses() if matches(str(h.get("harnessName", "")))]
        if args.action == "list":
            print_json([_summary(h) for h in found], out)
            return EXIT_OK
        outcomes = _sweep(client, found, deadline=time.monotonic() + args.timeout)
    print_json(outcomes, out)
    return EXIT_OK if all(o["outcome"] == "deleted" for o in outcomes) else EXIT_FAILED


def _matcher(prefix: str | None) -> Any:
    if prefix is None:
        return lambda name: True
    if not _PREFIX.fullmatch(prefix):
        raise CliError(
            f"--prefix {prefix!r} is not the start of a harness name",
            hint="a letter, then letters, digits or '_'; it matches names PREFIX_...",
        )
    start = prefix if prefix.endswith("_") else prefix + "_"
    return lambda name: name.startswith(start)


def _summary(harness: dict[str, Any]) -> dict[str, Any]:
    return {key: harness.get(key) for key in ("harnessName", "harnessId", "status")}


def _sweep(client: Any, found: list[dict[str, Any]], *, deadline: float) -> list[dict[str, Any]]:
    """Delete what can be deleted, then re-list until the deletions settle or time runs out."""
    outcomes = []
    for harness in found:
        outcome = {**_summary(harness), "outcome": "pending"}
        status = harness.get("status")
        if status in _DELETABLE:
            try:
                client.delete_harness(str(harness["harnessId"]))
            except NotFoundError:
                outcome["outcome"] = "deleted"  # gone since the listing
            except ConflictError:
                pass  # already being deleted: settled below
        elif status != "DELETING":
            outcome["outcome"] = "skipped"  # CREATING or UPDATING: a delete would conflict
        outcomes.append(outcome)
    polls = 0
    while True:
        waiting = [o for o in outcomes if o["outcome"] == "pending"]
        if not waiting:
            return outcomes
        listed = {str(h.get("harnessId")): h for h in client.list_harnesses()}
        for outcome in waiting:
            now = listed.get(str(outcome["harnessId"]))
            if now is None:
                outcome["outcome"] = "deleted"
            elif now.get("status") == "DELETE_FAILED":
                outcome["outcome"] = "failed"
        if time.monotonic() >= deadline:
            for outcome in outcomes:
                if outcome["outcome"] == "pending":
                    outcome["outcome"] = "unconfirmed"  # still DELETING: it may yet go
            return outcomes
        SETTLE_POLL.wait(polls, limit=deadline - time.monotonic())
        polls += 1
