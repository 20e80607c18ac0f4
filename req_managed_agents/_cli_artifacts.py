"""``rma artifacts list|fetch SESSION [NAME] [-o FILE]`` for both providers.

Claude reads ``ANTHROPIC_API_KEY`` (and ``ANTHROPIC_BASE_URL``); AgentCore uses the AWS
credential chain and needs ``--harness-arn`` and ``--mount``. ``list`` prints JSON; ``fetch``
writes the bytes to ``-o FILE``, or to standard output.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, BinaryIO, TextIO

__all__ = ["add_command", "run_command"]


def add_command(commands: Any) -> None:
    """Register ``rma artifacts`` on the ``rma`` subparsers."""
    artifacts = commands.add_parser("artifacts", help="list or fetch a session's files")
    actions = artifacts.add_subparsers(dest="action", metavar="ACTION", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("session", help="the session id (AgentCore: the runtime session id)")
    common.add_argument("--provider", choices=("claude", "agentcore"), default="claude")
    common.add_argument("--harness-arn", help="AgentCore: the harness the session runs on")
    common.add_argument("--mount", help="AgentCore: the session storage mount path")
    common.add_argument("--region", help="AgentCore: the AWS region")
    actions.add_parser("list", parents=[common], help="the session's files, as JSON")
    fetch = actions.add_parser("fetch", parents=[common], help="one file's bytes")
    fetch.add_argument("name")
    fetch.add_argument("-o", "--output", type=Path, help="write here instead of to stdout")


def run_command(
    args: argparse.Namespace, out: TextIO | None = None, binary_out: BinaryIO | None = None
) -> int:
    """Run ``rma artifacts``; returns the exit code."""
    out = out if out is not None else sys.stdout
    with _provider(args) as provider:
        store = _store(args, provider)
        if args.action == "list":
            listing = [
                {
                    "name": artifact.name,
                    "size": artifact.size,
                    "id": artifact.id,
                    "created_at": artifact.created_at.isoformat() if artifact.created_at else None,
                    "media_type": artifact.media_type,
                }
                for artifact in store.list()
            ]
            json.dump(listing, out, indent=2)
            out.write("\n")
            return 0
        data = store.fetch(args.name)
    if args.output is not None:
        args.output.write_bytes(data)
        out.write(f"wrote {len(data)} bytes to {args.output}\n")
    else:
        sink = binary_out if binary_out is not None else sys.stdout.buffer
        sink.write(data)
        sink.flush()
    return 0


def _provider(args: argparse.Namespace) -> Any:
    if args.provider == "agentcore":
        from req_managed_agents.providers import BedrockAgentCore

        return BedrockAgentCore(args.region)
    from req_managed_agents.providers import ClaudeManagedAgents

    return ClaudeManagedAgents()


def _store(args: argparse.Namespace, provider: Any) -> Any:
    from req_managed_agents.artifacts import AgentCoreSessionStorage, ClaudeFiles

    if args.provider == "agentcore":
        if not args.harness_arn or not args.mount:
            raise SystemExit("rma: AgentCore artifacts need --harness-arn and --mount")
        return AgentCoreSessionStorage(provider.client, args.harness_arn, args.session, args.mount)
    return ClaudeFiles(provider.client, args.session)
