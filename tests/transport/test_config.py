from __future__ import annotations

import pytest

from req_managed_agents import ConfigurationError
from req_managed_agents.transport._config import required_setting, setting, text_setting


def test_explicit_argument_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RMA_TEST_URL", "https://env")
    assert text_setting("https://explicit", "RMA_TEST_URL", "https://default") == "https://explicit"


def test_environment_is_used_when_no_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RMA_TEST_URL", " https://env ")
    assert text_setting(None, "RMA_TEST_URL", "https://default") == "https://env"


@pytest.mark.parametrize("explicit", [None, ""])
def test_none_or_empty_falls_through_to_the_default(
    explicit: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RMA_TEST_URL", "")
    assert text_setting(explicit, "RMA_TEST_URL", "https://default") == "https://default"


def test_environment_text_is_converted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RMA_TEST_TIMEOUT", "2.5")
    assert setting(None, "RMA_TEST_TIMEOUT", 60.0, float) == 2.5


def test_an_unparseable_environment_value_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RMA_TEST_TIMEOUT", "soon")
    with pytest.raises(ConfigurationError, match="RMA_TEST_TIMEOUT"):
        setting(None, "RMA_TEST_TIMEOUT", 60.0, float)


def test_a_missing_required_setting_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RMA_TEST_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="RMA_TEST_KEY"):
        required_setting(None, "RMA_TEST_KEY", "API key")
