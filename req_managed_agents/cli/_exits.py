"""Exit statuses: what each one means, and which one (with which hint) each failure gets.

:data:`EXIT_STATUSES` is the table the README's "Command line" section prints, row for row
(a test holds them equal); ``--help`` shows it as :data:`EXIT_STATUS_HELP`. :func:`describe`
is the one place a failure becomes a status, a message and a hint, for the ``rma:`` line on
standard error and for ``rma run --json`` alike. The library's messages speak of Python
arguments (``agent_id=``); here they are put in terms of flags and environment variables.
"""

from __future__ import annotations

import errno
import textwrap
from dataclasses import dataclass, replace

from req_managed_agents.errors import (
    APIError,
    ArtifactNotFoundError,
    AuthenticationError,
    ConfigurationError,
    ElicitationRequiredError,
    HarnessNotReadyError,
    InvocationOutcomeUnknownError,
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
    UnresolvedRequiresActionError,
)

__all__ = [
    "EXIT_ANSWERED",
    "EXIT_API",
    "EXIT_BROKEN_PIPE",
    "EXIT_CONFIG",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_STATUSES",
    "EXIT_STATUS_HELP",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "CliError",
    "Failure",
    "describe",
    "in_flag_terms",
    "resumable",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_API = 4
EXIT_ANSWERED = 5
EXIT_TIMEOUT = 124  # as timeout(1) reports a command it stopped
EXIT_INTERRUPTED = 130  # what shells report for a command stopped by Ctrl-C (128 + SIGINT)
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE

# (status, meaning): the README's exit status table, in its Markdown.
EXIT_STATUSES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "success; for `rma run` and `rma demo`, the agent ended its turn (`end_turn`)"),
    (
        EXIT_FAILED,
        "the run ended otherwise (`terminated`, max turns, a question nothing here answers), "
        "or the command failed: an unknown tag or handle, a missing artifact, a provisioning "
        "failure, a batch prompt that failed",
    ),
    (
        EXIT_USAGE,
        "usage error: bad, missing or conflicting flags, or a file named on the command line "
        "(spec, store, `--tools` module, batch input, output) that is missing, unreadable or "
        "invalid",
    ),
    (
        EXIT_CONFIG,
        "configuration error: no credentials, a missing or broken AWS profile, no region, a "
        "missing extra, a setting the library refuses",
    ),
    (
        EXIT_API,
        "the provider or the network failed: an API error, an unreachable endpoint, a broken "
        "stream",
    ),
    (
        EXIT_ANSWERED,
        "`rma pending`: the decision was answered first by someone else (the message says "
        "how and when); nothing was sent",
    ),
    (
        EXIT_TIMEOUT,
        "`--timeout` passed (`rma run`: the remote turn goes on; `--session-id` resumes it)",
    ),
    (EXIT_INTERRUPTED, "interrupted by Ctrl-C; a running turn is stopped remotely too"),
    (EXIT_BROKEN_PIPE, "the reader of the output went away (`rma ... \\| head`)"),
)


def _plain(markdown: str) -> str:
    return markdown.replace("`", "").replace("\\|", "|")


EXIT_STATUS_HELP = "exit status:\n" + "".join(
    textwrap.fill(
        _plain(meaning),
        width=79,
        initial_indent=f"  {status:<4} ",
        subsequent_indent=" " * 7,
        break_on_hyphens=False,
    )
    + "\n"
    for status, meaning in EXIT_STATUSES
)

# Library wording (Python arguments) -> command-line wording, applied to every message.
_FLAG_TERMS = (
    ("agent_id= (or agent=)", "--agent-id"),
    ("environment_id= (or environment=)", "--environment-id"),
    ("harness_arn= (or harness=)", "--harness-arn"),
    ("pass region= or set AWS_REGION", "pass --region or set AWS_REGION"),
    (
        "pass credentials= or configure one",
        "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or pass --profile or set AWS_PROFILE",
    ),
    ("(given as profile=)", "(given as --profile)"),
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
    (
        "define handle_confirmation on the handler or pass confirm='allow', 'deny' or 'defer'",
        "give --tools a handler that defines handle_confirmation, or pass --confirm allow, "
        "deny or defer",
    ),
    (
        "pass decisions=FileStore(...) (or a RedisStore)",
        "pass --decisions PATH (or a redis:// URL)",
    ),
)


# What authenticates each provider, and the variables that say where it is.
_CREDENTIALS = {
    "claude": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "gemini": "GOOGLE_API_KEY or GEMINI_API_KEY",
    "claude-bedrock": "the AWS credentials (--profile, AWS_PROFILE) or AWS_BEARER_TOKEN_BEDROCK",
    "agentcore": "the AWS credentials (--profile, AWS_PROFILE)",
    "worker": "ANTHROPIC_ENVIRONMENT_KEY or --environment-key-file",
}
_ENDPOINTS = {
    "claude": "ANTHROPIC_BASE_URL",
    "openai": "OPENAI_BASE_URL",
    "gemini": "GOOGLE_GEMINI_BASE_URL",
    "claude-bedrock": "ANTHROPIC_BEDROCK_BASE_URL",
    "agentcore": "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE, AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL",
    "worker": "ANTHROPIC_BASE_URL",
}
# An OSError about a path given on the command line is a usage error; others are failures.
_PATH_ERRORS = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM})


class CliError(Exception):
    """A failure reported as one ``rma: MESSAGE (hint: HINT)`` line and exit ``code``."""

    def __init__(self, message: str, *, hint: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.code = code


@dataclass(frozen=True)
class Failure:
    """How a command failed: its exit ``status``, the error's ``kind`` (the library's
    exception class, ``UsageError`` for a command-line mistake), ``message`` and ``hint``
    (empty when the message says it all)."""

    status: int
    kind: str
    message: str
    hint: str

    def json(self) -> dict[str, str]:
        """The ``error`` member of ``rma run --json``."""
        return {"type": self.kind, "message": self.message, "hint": self.hint}


def resumable(exc: BaseException) -> bool:
    """Whether continuing the session may succeed where a run failed: not after a refusal,
    a missing resource or a bad setting, which would fail the same way again."""
    if isinstance(exc, ProviderStreamError):
        return False
    return isinstance(
        exc,
        (
            KeyboardInterrupt,
            SessionTimeoutError,
            StreamError,
            TransportError,
            RateLimitError,
            ServerError,
        ),
    )


def describe(exc: BaseException, command: str, provider: str, resume: str | None = None) -> Failure:
    """The exit status, message and hint of ``exc``, which ended ``command`` (``rma run``)
    talking to ``provider`` (``claude``, ``openai``, ``gemini``, ``claude-bedrock``,
    ``agentcore``, or ``worker`` for a self-hosted environment's worker);
    ``resume`` is the command line that continues the session, when one does."""
    failure = _describe(exc, command, provider, resume)
    return replace(failure, message=in_flag_terms(failure.message))


def _describe(exc: BaseException, command: str, provider: str, resume: str | None) -> Failure:
    kind = type(exc).__name__
    if isinstance(exc, KeyboardInterrupt):
        # A session has already stopped its run (remote turn included) on the way out.
        return Failure(EXIT_INTERRUPTED, kind, "interrupted", "")
    if isinstance(exc, CliError):
        kind = "UsageError" if exc.code == EXIT_USAGE else "CommandError"
        return Failure(exc.code, kind, exc.message, exc.hint)
    if isinstance(exc, SessionTimeoutError) and resume:
        hint = f"{resume} waits for it (raise --timeout next time)"
        return Failure(EXIT_TIMEOUT, kind, f"{exc}; the session goes on", hint)
    decided = _decision_failure(exc)
    if decided is not None:
        return decided
    if isinstance(exc, ManagedAgentsError):
        status, hint = _library(exc, command, provider, resume)
        return Failure(status, kind, str(exc), hint)
    if isinstance(exc, OSError):
        what = f"{exc.strerror}: {exc.filename}" if exc.filename and exc.strerror else str(exc)
        status = EXIT_USAGE if exc.errno in _PATH_ERRORS and exc.filename else EXIT_FAILED
        return Failure(status, kind, what, "check the path and its permissions")
    return Failure(
        EXIT_FAILED,
        kind,
        f"unexpected {kind}: {exc}",
        f"this is a bug in {command}; please report it with the command line",
    )


def _decision_failure(exc: BaseException) -> Failure | None:
    """An answer to a decision that came second, or named no decision (else None)."""
    from req_managed_agents.drivers._decision_book import (
        AlreadyAnsweredError,
        DecisionNotFoundError,
    )

    kind = type(exc).__name__
    if isinstance(exc, AlreadyAnsweredError):
        from req_managed_agents.cli._decision_view import said, utc

        when = f" at {utc(exc.answered_at)}" if exc.answered_at else ""
        message = f"decision {exc.token[:8]}... was already answered{when}: {said(exc.first)}"
        hint = "the first answer stands; rma pending show TOKEN shows the decision"
        return Failure(EXIT_ANSWERED, kind, message, hint)
    if isinstance(exc, DecisionNotFoundError):
        hint = "rma pending list shows the decisions that wait; check the token and --decisions"
        return Failure(EXIT_USAGE, kind, str(exc), hint)
    return None


def in_flag_terms(message: str) -> str:
    """A library message with its Python-argument advice put in command-line terms."""
    for python, cli in _FLAG_TERMS:
        message = message.replace(python, cli)
    return message


def _library(
    exc: ManagedAgentsError, command: str, provider: str, resume: str | None
) -> tuple[int, str]:
    """The exit status and hint of a library error."""
    credentials = _CREDENTIALS.get(provider, _CREDENTIALS["claude"])
    again = f"; {resume} picks it up again" if resume else ""
    continuing = resume or "rma run --session-id SESSION"
    if isinstance(exc, SessionTimeoutError):
        return EXIT_TIMEOUT, "raise --timeout"
    if isinstance(exc, MissingDependencyError):
        return EXIT_CONFIG, f"install the extra: pip install 'req-managed-agents[{exc.extra}]'"
    if isinstance(exc, ConfigurationError):
        return EXIT_CONFIG, f"{command} --help lists the flags; credentials: {credentials}"
    if isinstance(exc, AuthenticationError):
        return EXIT_API, f"check {credentials}"
    if isinstance(exc, NotFoundError):
        return EXIT_API, "check the ids, ARNs and names given"
    if isinstance(exc, (RateLimitError, ServerError)):
        return EXIT_API, f"the provider is busy or failing; try again later{again}"
    if isinstance(exc, APIError):
        return EXIT_API, "the provider refused the request; the message says why"
    if isinstance(exc, TransportError):
        endpoint = _ENDPOINTS.get(provider, _ENDPOINTS["claude"])
        return EXIT_API, f"check the network and the endpoint ({endpoint}){again}"
    if isinstance(exc, ProviderStreamError):  # the provider's final word: resuming repeats it
        return EXIT_API, "the provider refused the turn; the message says why"
    if isinstance(exc, InvocationOutcomeUnknownError):
        return EXIT_API, f"the turn may have run: check, then {continuing} PROMPT goes on"
    if isinstance(exc, StreamError):
        return EXIT_API, f"the event stream failed; {continuing} picks it up again"
    if isinstance(exc, UnresolvedRequiresActionError):
        return (
            EXIT_FAILED,
            "the session waits for an answer nothing here gives; the message says which",
        )
    if isinstance(exc, ElicitationRequiredError):
        return EXIT_FAILED, f"act at the link, then {continuing} goes on"
    if isinstance(exc, HarnessNotReadyError):
        return EXIT_FAILED, "rma harnesses list shows each harness's status"
    if isinstance(exc, UnknownTagError):
        return EXIT_FAILED, "rma tag BASE TAG DIGEST --store PATH sets a tag"
    if isinstance(exc, ArtifactNotFoundError):
        return EXIT_FAILED, "rma artifacts list SESSION shows the session's files"
    return EXIT_FAILED, f"{command} --help describes the command"
