"""What every ``rma`` command shares: exit codes and the one-line error (from
:mod:`~req_managed_agents.cli._exits`), the argument parser, flag value types and the checks
that refuse flags which do not apply.

Nothing here imports ``requests`` or a provider, so building the parser stays cheap.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from req_managed_agents.cli._exits import (
    EXIT_API,
    EXIT_BROKEN_PIPE,
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STATUS_HELP,
    EXIT_TIMEOUT,
    EXIT_USAGE,
    CliError,
)

__all__ = [
    "AWS_PROVIDERS",
    "EXIT_API",
    "EXIT_BROKEN_PIPE",
    "EXIT_CONFIG",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_STATUS_HELP",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "PROVIDERS",
    "RUN_PROVIDERS",
    "CliError",
    "HelpFormatter",
    "Parser",
    "add_profile_flag",
    "existing_store",
    "flag",
    "given",
    "harness_region",
    "non_negative_int",
    "non_negative_seconds",
    "open_provider",
    "positive_int",
    "positive_seconds",
    "print_json",
    "refuse",
    "sandbox_region",
]

PROVIDERS = ("claude", "agentcore")
# rma run, batch, provision and teardown also drive Claude on Amazon Bedrock, OpenAI and
# Gemini.
RUN_PROVIDERS = (*PROVIDERS, "claude-bedrock", "openai", "gemini")
AWS_PROVIDERS = ("agentcore", "claude-bedrock")


class HelpFormatter(argparse.HelpFormatter):
    """Shows each option's default (when it has one); wraps one-paragraph descriptions and
    keeps text laid out over several lines (epilogs, the spec format) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text.strip():
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            "%(default)" in text
            or not action.option_strings
            or action.default in (None, False, [], argparse.SUPPRESS)
        ):
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one ``rma:`` line, not a usage block.

    Subcommand parsers are made with the parser's own class, so they behave the same.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise CliError(message, hint=f"{self.prog} --help shows the usage")


def flag(dest: str) -> str:
    """The command-line spelling of an argument's ``dest``."""
    return "--" + dest.replace("_", "-")


def given(value: Any) -> bool:
    """Whether an optional flag was given (defaults are None, or [] for repeatable ones)."""
    return value is not None and value != [] and value is not False


def refuse(args: argparse.Namespace, dests: Sequence[str], why: str, hint: str) -> None:
    """Refuse the first of ``dests`` that was given: a flag that does not apply is an error,
    never silently ignored."""
    for dest in dests:
        if given(getattr(args, dest, None)):
            raise CliError(f"{flag(dest)} {why}", hint=hint)


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def positive_seconds(text: str) -> float:
    """A duration that must be more than zero seconds."""
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def non_negative_seconds(text: str) -> float:
    """A duration that may be zero."""
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text!r}")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def positive_int(text: str) -> int:
    """A count or version of at least 1."""
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """A count that may be zero."""
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text!r}")
    return value


_HARNESS_ARN = re.compile(r"arn:aws[a-z-]*:bedrock-agentcore:([a-z0-9-]+):[0-9]{12}:harness/\S+")


def harness_region(arn: str, region: str | None) -> str:
    """The region of a harness ARN. The ARN says where the harness is, so a ``--region``
    naming another one is a contradiction, not an override."""
    match = _HARNESS_ARN.fullmatch(arn)
    if match is None:
        raise CliError(
            f"--harness-arn {arn!r} is not a Bedrock AgentCore harness ARN",
            hint="it looks like arn:aws:bedrock-agentcore:REGION:ACCOUNT:harness/ID",
        )
    arn_region = match.group(1)
    if region is not None and region != arn_region:
        raise CliError(
            f"--region {region} contradicts the harness ARN, which is in {arn_region}",
            hint="drop --region: the region of the ARN is used",
        )
    return arn_region


# The region an AWS ARN names (its fourth field).
_ARN_REGION = re.compile(r"arn:aws[a-z-]*:[a-z0-9-]+:([a-z0-9-]+):")


def sandbox_region(arn: str, region: str | None) -> str | None:
    """The region of a Bedrock agent's sandbox ARN (else ``region``); a ``--region`` naming
    another one contradicts it (the agent lives where its sandbox does)."""
    match = _ARN_REGION.match(arn)
    if match is None:
        return region
    if region is not None and region != match.group(1):
        raise CliError(
            f"--region {region} contradicts the sandbox ARN, which is in {match.group(1)}",
            hint="drop --region: the region of the ARN is used",
        )
    return match.group(1)


def existing_store(path: Path, *, must_exist: bool = True) -> Any:
    """The ``FileStore`` at ``path``, read once so a corrupt file is named as the command
    line's mistake. It must exist unless ``must_exist`` is false (``rma provision`` makes
    it): a mistyped path would otherwise read as an empty store (every tag unknown, nothing
    to tear down, nothing tagged to keep)."""
    if must_exist and not path.exists():
        raise CliError(
            f"the store {path} does not exist",
            hint="check --store; rma provision creates a store, the other commands read one",
        )
    from req_managed_agents.errors import ProvisioningError
    from req_managed_agents.provisioner import FileStore

    store = FileStore(path)
    try:
        store.items()  # a bad file fails here
    except ProvisioningError as exc:
        raise CliError(
            str(exc), hint="check --store: it names the JSON file rma provision writes"
        ) from None
    return store


def add_profile_flag(parser: argparse._ActionsContainer) -> None:
    """``--profile``, for the commands that reach AWS."""
    parser.add_argument(
        "--profile",
        metavar="NAME",
        help="AgentCore and claude-bedrock: the AWS profile whose credentials and region are "
        "used (default: AWS_PROFILE, else the default profile)",
    )


def open_provider(kind: str, region: str | None = None, profile: str | None = None) -> Any:
    """A provider from the environment's credentials (``ANTHROPIC_API_KEY``, the AWS chain
    or ``profile``, ``AWS_BEARER_TOKEN_BEDROCK``, ``OPENAI_API_KEY``, ``GOOGLE_API_KEY`` or
    ``GEMINI_API_KEY``)."""
    if kind == "gemini":
        from req_managed_agents.providers import GeminiManagedAgents

        return GeminiManagedAgents()
    if kind == "openai":
        from req_managed_agents.providers import OpenAIAgents

        return OpenAIAgents()
    if kind == "agentcore":
        from req_managed_agents.providers import BedrockAgentCore

        return BedrockAgentCore(region, profile=profile)
    if kind == "claude-bedrock":
        from req_managed_agents.providers import ClaudeManagedAgentsBedrock

        return ClaudeManagedAgentsBedrock(region, profile=profile)
    from req_managed_agents.providers import ClaudeManagedAgents

    return ClaudeManagedAgents()


def print_json(value: Any, out: TextIO) -> None:
    """Results go out as JSON, so they can be piped."""
    json.dump(value, out, indent=2, default=str)
    out.write("\n")
    out.flush()
