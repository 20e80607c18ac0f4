"""``rma``: the command-line entry point (argparse only, so it starts fast).

Every failure ends the same way: one ``rma: MESSAGE (hint: HINT)`` line on standard error
and an exit status from :data:`~req_managed_agents.cli._common.EXIT_STATUS_HELP`, never a
traceback. The library's messages speak of Python arguments (``agent_id=``); here they are
put in terms of flags and environment variables first.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Sequence

from req_managed_agents import __version__
from req_managed_agents.cli._common import (
    EXIT_API,
    EXIT_BROKEN_PIPE,
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STATUS_HELP,
    EXIT_TIMEOUT,
    CliError,
    Parser,
)
from req_managed_agents.errors import (
    APIError,
    ArtifactNotFoundError,
    AuthenticationError,
    ConfigurationError,
    ManagedAgentsError,
    MissingDependencyError,
    NotFoundError,
    ProviderStreamError,
    RateLimitError,
    ServerError,
    SessionTimeoutError,
    StreamError,
    TransportError,
    UnknownTagError,
)

__all__ = ["build_parser", "in_flag_terms", "main"]

# Library wording (Python arguments) -> command-line wording, applied to every message.
_FLAG_TERMS = (
    ("agent_id= (or agent=)", "--agent-id"),
    ("environment_id= (or environment=)", "--environment-id"),
    ("harness_arn= (or harness=)", "--harness-arn"),
    ("pass region= or set AWS_REGION", "pass --region or set AWS_REGION"),
    (
        "pass credentials= or configure one",
        "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE",
    ),
    ("pass it explicitly or set", "set"),
    ("execution_role_arn", "--execution-role-arn"),
    ("runtime_session_id", "--session-id"),
    ("session option vault_ids", "--vault-id"),
    ("session option metadata", "--session-metadata"),
    ("session option title", "--title"),
    (
        "define handle_confirmation on the handler or pass confirm='allow' or 'deny'",
        "give --tools a handler that defines handle_confirmation",
    ),
)


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
        _harnesses,
        _provisioning,
        _run,
        _worker,
    )

    _demo.add_command(commands)
    _run.add_command(commands)
    _batch.add_command(commands)
    _provisioning.add_commands(commands)
    _artifacts.add_command(commands)
    _harnesses.add_command(commands)
    _worker.add_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``rma`` with ``argv`` (default: the process arguments); return the exit code."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        # A session has already stopped its run (remote turn included) on the way out.
        _print_error("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``rma ... | head``): stop quietly, as other tools do, and keep
        # the interpreter's final flush from complaining again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    command = "rma"
    try:
        try:
            args, unknown = parser.parse_known_args(argv)
        except SystemExit as exit_:  # --help and --version print, then exit
            return exit_.code if isinstance(exit_.code, int) else EXIT_OK
        if args.command is None:
            if unknown:
                raise CliError(
                    f"unrecognized arguments: {' '.join(unknown)}{_closest(parser, unknown[0])}",
                    hint="rma --help lists the commands and options",
                )
            raise CliError("no command given", hint="rma --help lists the commands")
        command = " ".join(["rma", args.command, *([args.action] if "action" in args else [])])
        if unknown:
            raise CliError(
                f"unrecognized arguments: {' '.join(unknown)}",
                hint=f"{command} --help shows the usage",
            )
        return _run_command(args)
    except CliError as exc:
        _print_error(exc.message, exc.hint)
        return exc.code
    except ManagedAgentsError as exc:
        code, hint = _classify(exc, command)
        _print_error(str(exc), hint)
        return code
    except BrokenPipeError:
        raise
    except OSError as exc:
        what = f"{exc.strerror}: {exc.filename}" if exc.filename and exc.strerror else str(exc)
        _print_error(what, "check the path and its permissions")
        return EXIT_FAILED
    except Exception as exc:
        _print_error(
            f"unexpected {type(exc).__name__}: {exc}",
            f"this is a bug in {command}; please report it with the command line",
        )
        return EXIT_FAILED


def _classify(exc: ManagedAgentsError, command: str) -> tuple[int, str]:
    """The exit status and hint for a library error."""
    if isinstance(exc, SessionTimeoutError):
        return EXIT_TIMEOUT, "raise --timeout"
    if isinstance(exc, MissingDependencyError):
        return EXIT_CONFIG, f"install the extra: pip install 'req-managed-agents[{exc.extra}]'"
    if isinstance(exc, ConfigurationError):
        return (
            EXIT_CONFIG,
            f"{command} --help lists the flags; credentials come from the environment",
        )
    if isinstance(exc, AuthenticationError):
        return EXIT_API, "check ANTHROPIC_API_KEY (Claude) or the AWS credentials (AgentCore)"
    if isinstance(exc, NotFoundError):
        return EXIT_API, "check the ids, ARNs and names given"
    if isinstance(exc, (RateLimitError, ServerError)):
        return EXIT_API, "the provider is busy or failing; try again later"
    if isinstance(exc, APIError):
        return EXIT_API, "the provider refused the request"
    if isinstance(exc, TransportError):
        return EXIT_API, (
            "check the network and the endpoint (ANTHROPIC_BASE_URL, "
            "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE)"
        )
    if isinstance(exc, ProviderStreamError):  # the provider's final word: resuming repeats it
        return EXIT_API, "the provider refused the turn; the message says why"
    if isinstance(exc, StreamError):
        return EXIT_API, "the event stream failed; rma run --session-id SESSION picks it up again"
    if isinstance(exc, UnknownTagError):
        return EXIT_FAILED, "rma tag BASE TAG DIGEST --store PATH sets a tag"
    if isinstance(exc, ArtifactNotFoundError):
        return EXIT_FAILED, "rma artifacts list SESSION shows the session's files"
    return EXIT_FAILED, f"{command} --help describes the command"


def _closest(parser: argparse.ArgumentParser, given: str) -> str:
    """`` (did you mean --version?)`` for a misspelt top-level option or command."""
    known: list[str] = []
    for action in parser._actions:  # argparse keeps no public list of them
        known += action.option_strings
        if isinstance(action, argparse._SubParsersAction):
            known += list(action.choices)
    close = difflib.get_close_matches(given, known, n=1, cutoff=0.7)
    return f" (did you mean {close[0]}?)" if close else ""


def in_flag_terms(message: str) -> str:
    """A library message with its Python-argument advice put in command-line terms."""
    for python, cli in _FLAG_TERMS:
        message = message.replace(python, cli)
    return message


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
    if args.command == "run":
        from req_managed_agents.cli._run import run_command

        return run_command(args)
    if args.command == "worker":
        from req_managed_agents.cli._worker import run_command as run_worker_command

        return run_worker_command(args)
    if args.command == "batch":
        from req_managed_agents.cli._batch import run_command as run_batch_command

        return run_batch_command(args)
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
