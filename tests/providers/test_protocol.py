"""The provider protocol, met in full by every provider: each member called on all four, and
a user's script written against ``Provider`` alone type-checks under ``mypy --strict`` and
runs on each of them unchanged."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.providers import Conversation, Provider
from req_managed_agents.providers._base import Opening
from tests.faults._matrix import MatrixTools, Runtime
from tests.faults._runtimes import RUNTIMES

ROOT = Path(__file__).resolve().parents[2]
# Every member of the Conversation protocol: its annotated attributes and its methods.
_CONVERSATION = sorted(
    {name for name in vars(Conversation) if not name.startswith("_")}
    | set(Conversation.__annotations__)
)

# What a user writes once for every runtime: nothing in it names a provider class.
USER_SCRIPT = '''\
from collections.abc import Mapping
from typing import Any

from req_managed_agents import SessionResult, Tools, run_to_completion
from req_managed_agents.providers import Provider


def ask(provider: Provider, tools: Tools, connect: Mapping[str, Any]) -> SessionResult:
    """Run one prompt on any provider, and say which one answered."""
    unknown = set(connect) - provider.options
    if unknown:
        raise ValueError(f"{provider.label} takes no {sorted(unknown)}")
    shaping: list[str] = sorted(provider.session_options)
    with provider:
        result = run_to_completion(
            provider, "Compute.", handler=tools, max_turns=5, timeout=60, connect=connect
        )
    print(provider.name, provider.supports_outcomes, shaping, result.text)
    return result
'''


def _runtime_params() -> list[Any]:
    params = []
    for runtime in RUNTIMES:
        missing = [m for m in runtime.needs if importlib.util.find_spec(m) is None]
        marks = [pytest.mark.skip(reason=f"needs {missing}")] if missing else []
        params.append(pytest.param(runtime, id=runtime.name, marks=marks))
    return params


@pytest.mark.parametrize("runtime", _runtime_params())
def test_every_protocol_member_answers_on_every_provider(runtime: Runtime[Any]) -> None:
    with runtime.start(True) as emulator:
        connect = runtime.connect(emulator)
        provider: Provider = runtime.provider(emulator)
        assert provider.name == runtime.name
        assert isinstance(provider.label, str)
        assert provider.label
        assert isinstance(provider.options, frozenset)
        assert set(connect) <= provider.options, "the matrix's connect options are declared"
        assert isinstance(provider.session_options, Mapping)
        assert set(provider.session_options) <= provider.options
        assert all(isinstance(field, str) for field in provider.session_options.values())
        assert isinstance(provider.supports_outcomes, bool)

        events: list[Mapping[str, Any]] = []
        opening = Opening(on_event=events.append, prompt="Compute.", cancelled=threading.Event())
        with provider as entered:
            assert entered is provider
            conversation = provider.open_conversation(connect, opening)
            try:
                missing = [m for m in _CONVERSATION if not hasattr(conversation, m)]
                assert not missing, f"the conversation lacks {missing}"
                assert conversation.info.session_id
            finally:
                conversation.close()
        # __exit__ closed the provider; closing again is harmless.
        provider.close()


def test_a_script_written_against_the_protocol_type_checks_strictly(tmp_path: Path) -> None:
    (tmp_path / "user.py").write_text(USER_SCRIPT)
    # The package's own mypy cache (warm after the test command's mypy gate) keeps it short.
    cache = str(ROOT / ".mypy_cache")
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", cache, str(tmp_path / "user.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("runtime", _runtime_params())
def test_the_protocol_script_runs_on_every_provider(
    runtime: Runtime[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(USER_SCRIPT, "user.py", "exec"), namespace)
    tools = MatrixTools()
    with runtime.start(True) as emulator:
        result = namespace["ask"](runtime.provider(emulator), tools, runtime.connect(emulator))
    assert result.terminal == "end_turn"
    assert result.text == "The total is 30."
    assert sorted(tools.calls.values()) == [1, 1, 1]
    assert capsys.readouterr().out.startswith(f"{runtime.name} ")
