from __future__ import annotations

import pytest

import req_managed_agents as rma
from req_managed_agents import errors


def test_every_error_descends_from_the_root() -> None:
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), rma.ManagedAgentsError), name


def test_every_error_is_reexported_at_top_level() -> None:
    for name in errors.__all__:
        assert getattr(rma, name) is getattr(errors, name)
        assert name in rma.__all__


@pytest.mark.parametrize(
    ("error", "stdlib"),
    [
        (rma.ConfigurationError("x"), ValueError),
        (rma.MissingDependencyError("x", extra="aws"), ImportError),
        (rma.EventStreamError("x"), ValueError),
        (rma.IdleTimeoutError("x", idle_timeout=1.0), TimeoutError),
        (rma.SessionTimeoutError("x"), TimeoutError),
        (rma.UnknownTagError("base:tag"), KeyError),
    ],
)
def test_errors_also_match_the_stdlib_type_users_already_catch(
    error: Exception, stdlib: type
) -> None:
    assert isinstance(error, stdlib)


def test_api_error_carries_the_facts_a_user_needs() -> None:
    error = rma.NotFoundError(404, "not_found_error", "no such session", "req_123")
    assert (error.status_code, error.error_type, error.request_id) == (
        404,
        "not_found_error",
        "req_123",
    )
    assert error.message == "no such session"
    assert str(error) == "HTTP 404 not_found_error: no such session (request id req_123)"


def test_rate_limit_error_keeps_retry_after() -> None:
    error = rma.RateLimitError(429, "rate_limit_error", "slow down", retry_after=2.5)
    assert error.retry_after == 2.5
    assert isinstance(error, rma.APIError)


def test_provider_stream_error_names_the_exception_type() -> None:
    error = rma.ProviderStreamError("validationException", "duplicate Ids")
    assert error.exception_type == "validationException"
    assert str(error) == "validationException: duplicate Ids"


def test_partial_prune_error_lists_what_was_done() -> None:
    cause = rma.ServerError(500, None, "boom")
    error = rma.PartialPruneError(["env_a"], "env_b", cause)
    assert error.archived == ("env_a",)
    assert error.failed_name == "env_b"
    assert error.cause is cause
    assert "env_b" in str(error)


def test_unknown_tag_message_is_not_quoted_twice() -> None:
    assert str(rma.UnknownTagError("data:prod")) == "unknown tag 'data:prod'"
