from __future__ import annotations

import inspect

import pytest

from req_managed_agents import errors


def test_every_error_descends_from_the_root() -> None:
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.ManagedAgentsError), name


def test_every_error_the_module_defines_is_listed() -> None:
    defined = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and value.__module__ == errors.__name__
    }
    assert defined == set(errors.__all__)


@pytest.mark.parametrize(
    ("error", "stdlib"),
    [
        (errors.ConfigurationError("x"), ValueError),
        (errors.MissingDependencyError("x", extra="aws"), ImportError),
        (errors.EventStreamError("x"), ValueError),
        (errors.IdleTimeoutError("x", idle_timeout=1.0), TimeoutError),
        (errors.SessionTimeoutError("x"), TimeoutError),
        (errors.UnknownTagError("base:tag"), KeyError),
    ],
)
def test_errors_also_match_the_stdlib_type_users_already_catch(
    error: Exception, stdlib: type
) -> None:
    assert isinstance(error, stdlib)


def test_api_error_carries_the_facts_a_user_needs() -> None:
    error = errors.NotFoundError(404, "not_found_error", "no such session", "req_123")
    assert (error.status_code, error.error_type, error.request_id) == (
        404,
        "not_found_error",
        "req_123",
    )
    assert error.message == "no such session"
    assert str(error) == "HTTP 404 not_found_error: no such session (request id req_123)"


def test_rate_limit_error_keeps_retry_after() -> None:
    error = errors.RateLimitError(429, "rate_limit_error", "slow down", retry_after=2.5)
    assert error.retry_after == 2.5
    assert isinstance(error, errors.APIError)


def test_provider_stream_error_names_the_exception_type() -> None:
    error = errors.ProviderStreamError("validationException", "duplicate Ids")
    assert error.exception_type == "validationException"
    assert str(error) == "validationException: duplicate Ids"


def test_partial_prune_error_lists_what_was_done() -> None:
    cause = errors.ServerError(500, None, "boom")
    error = errors.PartialPruneError(["env_a"], "env_b", cause)
    assert error.archived == ("env_a",)
    assert error.failed_name == "env_b"
    assert error.cause is cause
    assert "env_b" in str(error)


def test_unknown_tag_message_is_not_quoted_twice() -> None:
    assert str(errors.UnknownTagError("data:prod")) == "unknown tag 'data:prod'"
