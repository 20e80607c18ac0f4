"""A distinctive fake credential must never surface anywhere a user or a log could see it."""

from __future__ import annotations

import logging
import pickle
from typing import Any

import pytest

from req_managed_agents import APIError, ConfigurationError, telemetry
from req_managed_agents._redact import MASK, Secret, get_logger, redact, redact_value

CANARY = "sk-ant-api03-CANARY-5f0e1d2c3b4a59687766554433221100"


def test_secret_repr_and_str_never_show_the_value() -> None:
    secret = Secret(CANARY)
    assert CANARY not in repr(secret)
    assert CANARY not in str(secret)
    assert CANARY not in f"{secret!r} {secret}"
    assert secret.reveal() == CANARY


def test_secret_refuses_to_be_pickled() -> None:
    with pytest.raises(TypeError):
        pickle.dumps(Secret(CANARY))


def test_registered_secrets_are_masked_in_any_text() -> None:
    Secret("unusual-credential-value-42")
    assert redact("token=unusual-credential-value-42;") == f"token={MASK};"


def test_a_forgotten_secret_is_no_longer_held_and_can_be_registered_again() -> None:
    from req_managed_agents import _redact

    value = "sesstok_forgotten-after-its-item-7"
    Secret(value)
    Secret("another-credential-still-held-8")
    held = len(_redact._secrets)
    _redact.forget_secret(value)
    assert len(_redact._secrets) == held - 1
    assert redact(f"a={value}") == f"a={value}"
    assert redact("b=another-credential-still-held-8") == f"b={MASK}"
    Secret(value)
    assert redact(f"a={value}") == f"a={MASK}"


def test_key_shaped_text_is_masked_even_if_never_registered() -> None:
    text = "key sk-ant-api03-neverseen00000 and AKIAABCDEFGHIJKLMNOP here"
    assert redact(text) == f"key {MASK} and {MASK} here"


def test_error_messages_are_redacted() -> None:
    Secret(CANARY)
    error = APIError(401, "authentication_error", f"invalid x-api-key {CANARY}", "req_1")
    assert CANARY not in str(error)
    assert CANARY not in repr(error)
    assert CANARY not in error.message
    assert CANARY not in str(ConfigurationError(f"bad key {CANARY}"))


def test_log_records_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    Secret(CANARY)
    logger = get_logger("req_managed_agents.test")
    with caplog.at_level(logging.DEBUG, logger="req_managed_agents.test"):
        logger.warning("request failed with key %s", CANARY)
    assert caplog.records
    assert CANARY not in caplog.text


def test_telemetry_metadata_is_redacted() -> None:
    Secret(CANARY)
    seen: list[dict[str, Any]] = []
    with telemetry.attach(lambda n, m, md: seen.append(md)):
        telemetry.emit("request.start", {}, {"url": f"https://x/?k={CANARY}", "nested": [CANARY]})
    assert seen
    assert CANARY not in repr(seen)


def test_redact_value_walks_json_like_values() -> None:
    Secret(CANARY)
    cleaned = redact_value({"a": [CANARY, 1, {"b": (CANARY,)}]})
    assert cleaned == {"a": [MASK, 1, {"b": (MASK,)}]}


def test_the_claude_provider_never_leaks_its_key(caplog: pytest.LogCaptureFixture) -> None:
    from req_managed_agents import Tools, run_to_completion
    from req_managed_agents.errors import AuthenticationError
    from req_managed_agents.providers import ClaudeManagedAgents
    from req_managed_agents.testing import ClaudeEmulator

    seen: list[Any] = []
    with (
        ClaudeEmulator() as emulator,
        ClaudeManagedAgents(CANARY, base_url=emulator.base_url, timeout=5) as provider,
        telemetry.attach(lambda n, m, md: seen.append((n, m, md))),
        caplog.at_level(logging.DEBUG),
    ):
        texts = [repr(provider), str(provider), repr(provider.client), repr(vars(provider.client))]
        with pytest.raises(AuthenticationError) as caught:
            run_to_completion(
                provider, "hi", handler=Tools(), agent_id="a", environment_id="e", timeout=10
            )
        texts += [str(caught.value), repr(caught.value), repr(caught.value.body)]
    assert seen, "telemetry was emitted"
    assert caplog.records, "something was logged"
    for text in [*texts, caplog.text, repr(seen)]:
        assert CANARY not in text


def test_the_agentcore_provider_never_leaks_its_secret_or_token(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from req_managed_agents import BedrockAgentCore, Tools, run_to_completion
    from req_managed_agents.errors import AuthenticationError
    from req_managed_agents.testing import AgentCoreEmulator

    secret = "wJalrXUtnFEMI/CANARY/SECRET/KEY/0123456789"
    token = "IQoJb3JpZ2luX2VjCANARYSESSIONTOKEN0123456789=="
    seen: list[Any] = []
    with (
        AgentCoreEmulator(session_token=token) as emulator,
        telemetry.attach(lambda n, m, md: seen.append((n, m, md))),
        caplog.at_level(logging.DEBUG),
    ):
        provider = BedrockAgentCore(
            emulator.region,
            credentials={
                "access_key_id": emulator.access_key_id,
                "secret_access_key": secret,  # not the emulator's: every request is refused
                "session_token": token,
            },
            endpoint_url=emulator.data_url,
            control_endpoint_url=emulator.control_url,
        )
        texts = [repr(provider), str(provider), repr(provider.client), repr(vars(provider.client))]
        with pytest.raises(AuthenticationError) as caught:
            run_to_completion(
                provider, "hi", handler=Tools(), harness_arn=emulator.add_harness(), timeout=10
            )
        texts += [str(caught.value), repr(caught.value), repr(caught.value.body)]
    assert seen, "telemetry was emitted"
    assert any(r.name.startswith("botocore") for r in caplog.records), "botocore logged"
    for text in [*texts, caplog.text, repr(seen)]:
        assert secret not in text
        assert token not in text


# Made-up keys in each shape OpenAI issues: project, service account, admin, legacy.
_OPENAI_KEYS = (
    "sk-proj-Xq3v9Lm2Rt8Wn4Kp0Zc7Yb1Hd6Fg5Js_Aa-Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0Kk1Ll2",
    "sk-svcacct-Qw7Er5Ty3Ui1Op9As7Df5Gh3Jk1Lz_Xc-Vb8Nm6Qa4Ws2Ed0Rf",
    "sk-admin-Mn5Bv3Cx1Zl9Kj7Hg5Fd3Sa1Po9Iu_Yt-Re7Wq5",
    "sk-Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9T3BlbkFJBc2Df4Gh6Jk8Lm0Np2Qr",
)


def test_openai_key_shapes_are_masked_in_a_process_that_never_built_an_openai_provider() -> None:
    import subprocess
    import sys

    code = f"""
import json, logging, sys
from req_managed_agents import APIError, ManagedAgentsError, telemetry
from req_managed_agents._redact import get_logger
keys = {_OPENAI_KEYS!r}
texts = []
for key in keys:
    texts.append(str(ManagedAgentsError(f"the service echoed {{key}} back")))
    error = APIError(401, "invalid_api_key", f"Incorrect API key provided: {{key}}", "req_1",
                     body={{"error": {{"message": key}}}})
    texts += [str(error), repr(error.body)]
    seen = []
    with telemetry.attach(lambda n, m, md: seen.append(md)):
        telemetry.emit("request.start", {{}}, {{"url": f"https://x/?k={{key}}"}})
    texts.append(repr(seen))
handler = logging.StreamHandler(sys.stdout)
logger = get_logger("req_managed_agents.test")
logger.addHandler(handler)
logger.setLevel(logging.INFO)
for key in keys:
    logger.warning("request failed with key %s", key)
print(json.dumps(texts))
assert "req_managed_agents.providers.openai" not in sys.modules
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert MASK in done.stdout
    for key in _OPENAI_KEYS:
        assert key not in done.stdout
        assert key[:12] not in done.stdout, "only the mask shows, not a prefix of the key"


def test_short_sk_words_are_not_mistaken_for_openai_keys() -> None:
    text = "sk-test, sk-1, a task-proj-planner-overview-document and sk-learn"
    assert redact(text) == text
