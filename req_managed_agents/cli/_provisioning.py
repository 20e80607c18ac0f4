"""``rma provision``, ``rma teardown``, ``rma environments list|prune``, ``rma tag`` and
``rma resolve``.

Every command takes ``--store PATH`` (a :class:`FileStore`; provisioning is idempotent across
runs only when they share one). ``rma provision`` creates the store; the others need it to
exist, since a mistyped path would read as an empty store. Credentials come from the
environment as for the library: ``ANTHROPIC_API_KEY`` (and ``ANTHROPIC_BASE_URL``) for
Claude, the AWS chain (or ``AWS_BEARER_TOKEN_BEDROCK``, and ``ANTHROPIC_BEDROCK_BASE_URL``)
for Claude on Amazon Bedrock, the AWS chain for AgentCore. Results are printed as JSON so
they can be piped.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from req_managed_agents.cli._common import (
    EXIT_FAILED,
    RUN_PROVIDERS,
    CliError,
    add_profile_flag,
    existing_store,
    harness_region,
    non_negative_int,
    open_provider,
    print_json,
    refuse,
    sandbox_region,
)
from req_managed_agents.cli._spec import SPEC_HELP, load_spec
from req_managed_agents.display._progress_line import ProgressLine
from req_managed_agents.errors import ManagedAgentsError

__all__ = ["COMMANDS", "add_commands", "run_command"]

COMMANDS = frozenset({"provision", "teardown", "environments", "tag", "resolve"})

_SPEC_HINT = "rma provision --help describes the spec file"
_AWS_ONLY = "is an AWS option; it needs --provider agentcore or claude-bedrock"
_DEFAULT_REGION = "AWS_REGION, then the profile's region"
_ROLE_HINTS = {
    "agentcore": "the IAM role the harness runs as, e.g. arn:aws:iam::123456789012:role/Harness",
    "claude-bedrock": "the IAM role the agent's sessions run as, "
    "e.g. arn:aws:iam::123456789012:role/Agent",
}
_SANDBOX_HINT = (
    "give --environment-id the ARN of the sandbox the agent's sessions run in, "
    "e.g. arn:aws:bedrock-agentcore:us-west-2:123456789012:runtime/sandbox-0123456789"
)

TEARDOWN_HELP = """\
With SPEC.json (the file given to rma provision), the resource is found by its
content-addressed name at the provider, so the store need not remember it. With a
NAME (the "name" rma provision printed), the store must know the handle; its kind and
(for AgentCore) its region come from there. A resource already gone counts as torn
down. Claude environments are shared by every agent of the same environment spec and
stay; rma environments prune archives old ones. A Claude agent on Amazon Bedrock is
found by spec with its --execution-role-arn (part of its identity), and by NAME in the
region of its sandbox ARN. Prints {"torn_down": NAME, "kind", "id"}, or
{"torn_down": null} when a spec's resource does not exist.
"""


def add_commands(commands: Any) -> None:
    """Register the provisioning subcommands on the ``rma`` subparsers."""
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument(
        "--store",
        required=True,
        type=Path,
        metavar="PATH",
        help="the JSON file that remembers what was provisioned (rma provision creates it; "
        "the other commands need it to exist)",
    )
    provision = commands.add_parser(
        "provision",
        parents=[store],
        help="create (or find) the resources for a spec file",
        description="Provision the agent (and environment) described by SPEC.json and print "
        "its handle as JSON. Idempotent: the same spec and store give the same handle.",
        epilog=SPEC_HELP,
    )
    provision.add_argument("spec", type=Path, metavar="SPEC.json", help="the spec file (below)")
    provision.add_argument(
        "--provider", choices=RUN_PROVIDERS, default="claude", help="where to provision"
    )
    provision.add_argument(
        "--environment-id",
        metavar="ARN",
        help="claude-bedrock: the ARN of the sandbox the agent's sessions run in (required "
        "there; Bedrock has no environments to provision, so the spec has no environment)",
    )
    _aws_flags(
        provision,
        "required with --provider agentcore or claude-bedrock",
        f"claude-bedrock: the sandbox ARN's, which a different one contradicts; else "
        f"{_DEFAULT_REGION}",
    )

    teardown = commands.add_parser(
        "teardown",
        parents=[store],
        help="remove what rma provision made",
        description="Archive the Claude agent (on Anthropic's API or Amazon Bedrock), or delete "
        "the OpenAI or Gemini agent or the AgentCore harness, that rma provision made, and "
        "forget it in the store.",
        epilog=TEARDOWN_HELP,
    )
    teardown.add_argument(
        "target",
        metavar="SPEC.json|NAME",
        help="the spec file that was provisioned, or the handle's name",
    )
    teardown.add_argument(
        "--provider",
        choices=RUN_PROVIDERS,
        help="with SPEC.json: where it was provisioned (default: claude); "
        "with NAME the stored handle says, and a different --provider is refused",
    )
    _aws_flags(
        teardown,
        "required with SPEC.json and --provider agentcore or claude-bedrock, refused with NAME",
        "with NAME the harness's or sandbox's ARN's, which a different one contradicts; "
        f"else {_DEFAULT_REGION}",
    )

    environments = commands.add_parser("environments", help="list or prune Claude environments")
    actions = environments.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser(
        "list",
        parents=[store],
        help="the live versions of a base, with their tags",
        description="List the live Claude environments named BASE_<digest8>, with the "
        "tags the store gives each.",
    )
    listing.add_argument("--base", required=True, help="the environment base name")
    prune = actions.add_parser(
        "prune",
        parents=[store],
        help="archive all but the newest N and the tagged versions",
        description="Archive the versions of BASE except the newest N and the ones the store tags.",
    )
    prune.add_argument("--base", required=True, help="the environment base name")
    prune.add_argument(
        "--keep",
        type=non_negative_int,
        required=True,
        metavar="N",
        help="how many of the newest versions to keep",
    )

    tag = commands.add_parser(
        "tag",
        parents=[store],
        help="name an environment version",
        description="Point BASE:TAG at the environment version DIGEST (re-tagging moves it).",
    )
    tag.add_argument("base", help="the environment base name")
    tag.add_argument("tag", help="the tag, e.g. prod")
    tag.add_argument("digest", help="the digest8 of an environment of that base in the store")

    resolve = commands.add_parser(
        "resolve",
        parents=[store],
        help="look up BASE:TAG",
        description="Print the environment handle BASE:TAG points at.",
    )
    resolve.add_argument("ref", metavar="BASE:TAG", help="the tagged environment")


def _aws_flags(parser: argparse.ArgumentParser, role: str, region: str) -> None:
    parser.add_argument(
        "--execution-role-arn",
        metavar="ARN",
        help="AgentCore: the IAM role the harness runs as; claude-bedrock: the role the "
        f"agent's sessions run as; part of its identity ({role})",
    )
    parser.add_argument(
        "--region",
        help=f"AgentCore and claude-bedrock: the AWS region (default: {region})",
    )
    add_profile_flag(parser)


def run_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run one provisioning command; returns the exit code."""
    out = out if out is not None else sys.stdout
    from req_managed_agents import provisioner

    result: Any
    if args.command == "provision":
        result = _provision(args)
    elif args.command == "teardown":
        result = _teardown(args)
    elif args.command == "environments":
        result = _environments(args)
    elif args.command == "tag":
        store = existing_store(args.store)
        with _refused_values("rma environments list --base BASE shows the digests"):
            provisioner.tag(args.base, args.tag, args.digest, store=store)
        result = {"tagged": f"{args.base}:{args.tag}", "digest": args.digest}
    else:
        store = existing_store(args.store)
        with _refused_values("a reference looks like BASE:TAG, e.g. web:prod"):
            result = asdict(provisioner.resolve(args.ref, store=store))
    print_json(result, out)
    return 0


@contextlib.contextmanager
def _refused_values(hint: str) -> Iterator[None]:
    """The provisioner refuses bad values with ``ValueError``: here they came from the
    command line or the spec, so they are usage errors."""
    try:
        yield
    except ManagedAgentsError:
        raise
    except ValueError as exc:
        raise CliError(str(exc), hint=hint) from None


def _check_aws_flags(args: argparse.Namespace, provider: str) -> None:
    if provider in ("claude", "openai", "gemini"):
        refuse(
            args,
            ["execution_role_arn", "region", "profile"],
            _AWS_ONLY,
            "add --provider agentcore or claude-bedrock",
        )
    elif not args.execution_role_arn:
        raise CliError(
            f"rma {args.command} --provider {provider} needs --execution-role-arn",
            hint=_ROLE_HINTS[provider],
        )


def _provision(args: argparse.Namespace) -> dict[str, Any]:
    from req_managed_agents import provisioner

    _check_aws_flags(args, args.provider)
    agent, environment = load_spec(args.spec)
    region = args.region
    if args.provider == "claude-bedrock":
        if environment is not None:
            raise CliError(
                f"the spec {args.spec} has an environment, which Claude on Amazon Bedrock "
                "does not provision",
                hint=f"drop its environment and {_SANDBOX_HINT}",
            )
        if not args.environment_id:
            raise CliError(
                "rma provision --provider claude-bedrock needs --environment-id",
                hint=_SANDBOX_HINT,
            )
        environment = args.environment_id
        region = sandbox_region(args.environment_id, args.region)
    elif args.provider in ("openai", "gemini") and environment is not None:
        who = "an OpenAI agent" if args.provider == "openai" else "a Gemini agent"
        raise CliError(
            f"the spec {args.spec} has an environment; {who} has none",
            hint="drop it: each session names its environment (rma run --environment)",
        )
    else:
        refuse(
            args,
            ["environment_id"],
            "is the sandbox of a Claude agent on Amazon Bedrock",
            "add --provider claude-bedrock, or drop --environment-id (the spec provisions "
            "the environment)",
        )
    store = existing_store(args.store, must_exist=False)
    with (
        open_provider(args.provider, region, args.profile) as provider,
        _refused_values(_SPEC_HINT),
        ProgressLine() as line,
        line.showing_logs(),
    ):
        handle = provisioner.provision(
            provider,
            agent,
            environment=environment,
            store=store,
            execution_role_arn=args.execution_role_arn,
            progress=line,
        )
    return asdict(handle)


def _teardown(args: argparse.Namespace) -> dict[str, Any]:
    store = existing_store(args.store)
    path = Path(args.target)
    if path.is_file():
        return _teardown_spec(args, path, store)
    if path.suffix == ".json" or len(path.parts) > 1:
        raise CliError(
            f"the spec {path} does not exist",
            hint="give the spec file rma provision was given, or the handle's name",
        )
    return _teardown_named(args, args.target, store)


def _teardown_spec(args: argparse.Namespace, path: Path, store: Any) -> dict[str, Any]:
    from req_managed_agents import provisioner
    from req_managed_agents.provisioner._provision import locate

    kind = args.provider or "claude"
    _check_aws_flags(args, kind)
    agent, environment = load_spec(path)
    with open_provider(kind, args.region, args.profile) as provider, _refused_values(_SPEC_HINT):
        handle = locate(provider, agent, environment, args.execution_role_arn)
        if handle is None:
            return {"torn_down": None}
        provisioner.teardown(provider, handle, store=store)
    return _torn_down(asdict(handle))


def _teardown_named(args: argparse.Namespace, name: str, store: Any) -> dict[str, Any]:
    from req_managed_agents import provisioner

    refuse(
        args,
        ["execution_role_arn"],
        "only applies to tearing down by spec file",
        "a stored handle needs no role: drop --execution-role-arn",
    )
    record = _stored_handle(store, name, args.store)
    kind = str(record["kind"])
    if args.provider is not None and args.provider != kind:
        raise CliError(
            f"--provider {args.provider} contradicts the stored handle {name!r}, which is {kind}",
            hint="drop --provider: the store knows where the handle lives",
        )
    region = None
    if kind == "agentcore":
        region = harness_region(str(record.get("harness_arn", "")), args.region)
    elif kind == "claude-bedrock":
        region = sandbox_region(str(record.get("environment_id", "")), args.region)
    else:
        refuse(args, ["region", "profile"], _AWS_ONLY, f"{name!r} is a {kind} agent: drop it")
    args.provider = kind  # for the hints of a failure from here on
    with open_provider(kind, region, args.profile) as provider:
        provisioner.teardown(provider, record, store=store)
    return _torn_down(record)


def _stored_handle(store: Any, name: str, path: Path) -> dict[str, Any]:
    """The one agent handle named ``name`` in the store."""
    records = [value for value in store.items().values() if isinstance(value, dict)]
    handles = [r for r in records if r.get("name") == name and r.get("kind") in RUN_PROVIDERS]
    resources = {(r["kind"], r.get("agent_id") or r.get("harness_arn")) for r in handles}
    if len(resources) > 1:
        raise CliError(
            f"the store {path} holds {len(resources)} different handles named {name!r}",
            hint="tear down by spec file instead",
            code=EXIT_FAILED,
        )
    if handles:
        return handles[0]
    if any(r.get("name") == name and "environment_id" in r for r in records):
        raise CliError(
            f"{name!r} is an environment, not an agent",
            hint="environments are shared; rma environments prune --base BASE --keep N "
            "archives old ones",
            code=EXIT_FAILED,
        )
    raise CliError(
        f"the store {path} has no handle named {name!r}",
        hint='the name is the "name" rma provision printed; or give its spec file',
        code=EXIT_FAILED,
    )


def _torn_down(handle: dict[str, Any]) -> dict[str, Any]:
    kind = handle["kind"]
    resource = handle["harness_arn"] if kind == "agentcore" else handle["agent_id"]
    return {"torn_down": handle["name"], "kind": kind, "id": resource}


def _environments(args: argparse.Namespace) -> Any:
    from req_managed_agents import provisioner
    from req_managed_agents.provisioner._identity import split_name

    store = existing_store(args.store)
    with open_provider("claude") as provider, _refused_values("--base is a name without ':'"):
        if args.action == "prune":
            pruned = provisioner.prune_environments(
                provider, args.base, keep=args.keep, store=store
            )
            return asdict(pruned)
        tags = _tags_by_digest(store, args.base)
        environments = provider.client.list_environments()
        bases = {(split_name(str(env.get("name", ""))) or ("",))[0] for env in environments}
        if args.base not in bases:
            near = sorted(base for base in bases if base and base.startswith(args.base))
            known = ", ".join(near or sorted(b for b in bases if b)) or "none"
            print(
                f"rma: note: no environment has the base {args.base!r}; bases: {known}",
                file=sys.stderr,
            )
        return [
            {
                "name": env["name"],
                "id": env["id"],
                "created_at": env.get("created_at"),
                "tags": tags.get(str(env["name"])[-8:], []),
            }
            for env in environments
            if (split_name(str(env.get("name", ""))) or ("",))[0] == args.base
        ]


def _tags_by_digest(store: Any, base: str) -> dict[str, list[str]]:
    """The tags of ``base`` by digest8 (the store keys ``tags:<base>`` lists them and
    ``tag:<base>:<tag>`` holds each one's digest8)."""
    tags: dict[str, list[str]] = {}
    for name in store.get(f"tags:{base}") or []:
        digest_8 = store.get(f"tag:{base}:{name}")
        if isinstance(digest_8, str):
            tags.setdefault(digest_8, []).append(str(name))
    return tags
