"""``rma provision``, ``rma environments list|prune``, ``rma tag`` and ``rma resolve``.

Every command takes ``--store PATH`` (a :class:`FileStore`; provisioning is idempotent across
runs only when they share one). Credentials come from the environment as for the library:
``ANTHROPIC_API_KEY`` (and ``ANTHROPIC_BASE_URL``) for Claude, the AWS chain for AgentCore.
Results are printed as JSON so they can be piped.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

__all__ = ["add_commands", "run_command"]

COMMANDS = frozenset({"provision", "environments", "tag", "resolve"})


def add_commands(commands: Any) -> None:
    """Register the provisioning subcommands on the ``rma`` subparsers."""
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument("--store", required=True, type=Path, help="the JSON store file")

    provision = commands.add_parser(
        "provision",
        parents=[store],
        help="create (or find) the resources for a spec file",
        description="Provision the agent (and environment) described by SPEC.json, "
        'e.g. {"agent": {"name", "system_prompt", "model", "tools"}, '
        '"environment": {"config", "runtimes"}}. Prints the handle.',
    )
    provision.add_argument("spec", type=Path, help="the spec file (JSON)")
    provision.add_argument("--provider", choices=("claude", "agentcore"), default="claude")
    provision.add_argument("--execution-role-arn", help="the IAM role a harness runs as")
    provision.add_argument("--region", help="AWS region (AgentCore)")

    environments = commands.add_parser("environments", help="list or prune Claude environments")
    actions = environments.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", parents=[store], help="the live versions of a base")
    listing.add_argument("--base", required=True)
    prune = actions.add_parser(
        "prune", parents=[store], help="archive all but the newest N and the tagged versions"
    )
    prune.add_argument("--base", required=True)
    prune.add_argument("--keep", type=int, required=True, help="how many newest versions to keep")

    tag = commands.add_parser("tag", parents=[store], help="name an environment version")
    tag.add_argument("base")
    tag.add_argument("tag")
    tag.add_argument("digest", help="the digest8 of an ensured environment of that base")

    resolve = commands.add_parser("resolve", parents=[store], help="look up BASE:TAG")
    resolve.add_argument("ref", help="base:tag")


def run_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run one provisioning command; returns the exit code."""
    out = out if out is not None else sys.stdout
    from req_managed_agents import provisioner

    store = provisioner.FileStore(args.store)
    if args.command == "provision":
        result: Any = _provision(args, store)
    elif args.command == "environments":
        result = _environments(args, store)
    elif args.command == "tag":
        provisioner.tag(args.base, args.tag, args.digest, store=store)
        result = {"tagged": f"{args.base}:{args.tag}", "digest": args.digest}
    else:
        result = asdict(provisioner.resolve(args.ref, store=store))
    json.dump(result, out, indent=2)
    out.write("\n")
    return 0


def _provision(args: argparse.Namespace, store: Any) -> dict[str, Any]:
    from req_managed_agents import provisioner

    try:
        data = json.loads(args.spec.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"rma: cannot read the spec {args.spec}: {exc}") from exc
    if not isinstance(data, dict) or "agent" not in data:
        raise SystemExit('rma: the spec must be a JSON object with an "agent" member')
    agent = provisioner.AgentSpec.from_dict(data["agent"])
    environment = (
        provisioner.EnvironmentSpec.from_dict(data["environment"])
        if data.get("environment") is not None
        else None
    )
    with _provider(args) as provider:
        handle = provisioner.provision(
            provider,
            agent,
            environment=environment,
            store=store,
            execution_role_arn=args.execution_role_arn,
        )
    return asdict(handle)


def _environments(args: argparse.Namespace, store: Any) -> Any:
    from req_managed_agents import provisioner
    from req_managed_agents.providers import ClaudeManagedAgents
    from req_managed_agents.provisioner._identity import split_name

    with ClaudeManagedAgents() as provider:
        if args.action == "prune":
            pruned = provisioner.prune_environments(
                provider, args.base, keep=args.keep, store=store
            )
            return asdict(pruned)
        return [
            {"name": env["name"], "id": env["id"], "created_at": env.get("created_at")}
            for env in provider.client.list_environments()
            if (split_name(str(env.get("name", ""))) or ("",))[0] == args.base
        ]


def _provider(args: argparse.Namespace) -> Any:
    if args.provider == "agentcore":
        from req_managed_agents.providers import BedrockAgentCore

        return BedrockAgentCore(args.region)
    from req_managed_agents.providers import ClaudeManagedAgents

    return ClaudeManagedAgents()
