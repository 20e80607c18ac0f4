"""What an ``EnvironmentWorker`` refuses before it sends anything, each refusal naming the
argument; where its environment key comes from; and its sandbox, tried once."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

import pytest

from req_managed_agents import ConfigurationError, ToolContext, ToolLedger, ToolResult, Tools
from req_managed_agents.model import SessionInfo
from req_managed_agents.providers import ClaudeManagedAgents
from req_managed_agents.toolset import AgentToolset, ShellLimits
from req_managed_agents.toolset._sandbox import _bwrap_prefix
from req_managed_agents.worker import EnvironmentWorker
from tests.worker.conftest import Hosted

pytestmark = pytest.mark.filterwarnings("ignore::req_managed_agents.toolset.UnsandboxedWarning")


@pytest.fixture
def provider() -> ClaudeManagedAgents:
    return ClaudeManagedAgents("sk-test", base_url="http://127.0.0.1:9")


def make(provider: Any, tmp_path: Path, **options: Any) -> EnvironmentWorker:
    options.setdefault("environment_key", "envkey-test")
    options.setdefault("sandbox", "none")
    return EnvironmentWorker(
        provider,
        options.pop("environment_id", "env_1"),
        workdir=options.pop("workdir", tmp_path),
        **options,
    )


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("environment_id", "", "environment_id"),
        ("environment_id", "..", "environment_id"),
        ("environment_key", 3, "environment_key"),
        ("environment_key", "two words", "environment key"),
        ("handler", object(), "handler"),
        ("toolset", 3, "toolset"),
        ("sandbox", "docker", "sandbox"),
        ("network", "yes", "network"),
        ("limits", {"processes": 10}, "limits must be a ShellLimits"),
        ("max_sessions", 0, "max_sessions"),
        ("max_sessions", True, "max_sessions"),
        ("max_sessions", "4", "max_sessions"),
        ("ledger", object(), "ledger"),
        ("on_unfinished", "retry", "on_unfinished"),
        ("idle_grace", -1, "idle_grace"),
        ("idle_grace", float("nan"), "idle_grace"),
        ("tool_timeout", 0, "tool_timeout"),
        ("worker_id", "two words", "worker_id"),
        ("worker_id", "", "worker_id"),
        ("confirm", "ask", "confirm"),
        ("on_item", "print", "on_item"),
    ],
)
def test_a_bad_argument_is_refused_by_name(
    provider: ClaudeManagedAgents, tmp_path: Path, option: str, value: Any, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        make(provider, tmp_path, **{option: value})


def test_the_workdir_must_be_a_folder(provider: ClaudeManagedAgents, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigurationError, match="workdir"):
        make(provider, tmp_path, workdir=tmp_path / "file")
    with pytest.raises(ConfigurationError, match="workdir"):
        make(provider, tmp_path, workdir=3)
    made = make(provider, tmp_path, workdir=tmp_path / "new" / "dir")
    assert made.settings.workdir == (tmp_path / "new" / "dir").resolve()
    assert oct((tmp_path / "new" / "dir").stat().st_mode & 0o777) == oct(0o700)


def test_only_a_claude_provider_is_taken(tmp_path: Path) -> None:
    pytest.importorskip("botocore")
    from req_managed_agents.providers import ClaudeManagedAgentsBedrock

    bedrock = ClaudeManagedAgentsBedrock("us-east-1", api_key="bedrock-key")
    with pytest.raises(ConfigurationError, match="Bedrock has no self-hosted"):
        make(bedrock, tmp_path)
    with pytest.raises(ConfigurationError, match="ClaudeManagedAgents"):
        make(object(), tmp_path)


def test_the_environment_key_comes_from_the_environment(
    provider: ClaudeManagedAgents, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_ENVIRONMENT_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="set ANTHROPIC_ENVIRONMENT_KEY"):
        make(provider, tmp_path, environment_key=None)
    monkeypatch.setenv("ANTHROPIC_ENVIRONMENT_KEY", "envkey-from-env\n")
    made = make(provider, tmp_path, environment_key=None)
    assert made.settings.environment_key.reveal() == "envkey-from-env"
    assert "envkey-from-env" not in repr(made) + repr(made.settings)


def test_sandbox_and_network_shape_only_the_default_toolset(
    provider: ClaudeManagedAgents, tmp_path: Path
) -> None:
    def factory(folder: Path) -> Tools:
        return Tools()

    with pytest.raises(ConfigurationError, match="sandbox, network and limits"):
        make(provider, tmp_path, toolset=factory, sandbox="bwrap")
    with pytest.raises(ConfigurationError, match="sandbox, network and limits"):
        make(provider, tmp_path, toolset=factory, sandbox="auto", network=True)
    with pytest.raises(ConfigurationError, match="sandbox, network and limits"):
        make(provider, tmp_path, toolset=factory, sandbox="auto", limits=None)
    made = make(provider, tmp_path, toolset=factory, sandbox="auto")
    assert made.settings.toolset is factory
    assert made.settings.sandbox is None


def test_the_sandbox_is_tried_once_and_every_session_gets_what_was_found(
    provider: ClaudeManagedAgents, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    problem = _bwrap_prefix(str(tmp_path), network=False)[1]
    if problem is not None:
        made = make(provider, tmp_path, sandbox="auto")
        assert made.settings.sandbox == "none"
        assert problem in caplog.text  # the worker's one record says why
        with pytest.raises(ConfigurationError, match="bwrap"):
            make(provider, tmp_path, sandbox="bwrap")
    else:
        made = make(provider, tmp_path, sandbox="auto")
        assert made.settings.sandbox == "bwrap"
    folder = tmp_path / "sesn_1"
    folder.mkdir()
    toolset = made.settings.toolset(folder)
    assert isinstance(toolset, AgentToolset)
    assert toolset.sandbox == made.settings.sandbox
    assert toolset.workdir == str(folder.resolve())
    assert isinstance(made.settings.ledger, ToolLedger)  # one ledger for every session


def test_run_takes_an_event_and_runs_once_at_a_time(
    hosted: Callable[..., Hosted], tmp_path: Path
) -> None:
    world = hosted()
    worker = world.worker(tmp_path)
    with pytest.raises(ConfigurationError, match=r"threading\.Event"):
        worker.run(True)  # type: ignore[arg-type]
    stop = threading.Event()
    first = threading.Thread(target=worker.run, args=(stop,))
    first.start()
    try:
        assert world.emulator.wait_until(lambda: world.emulator.requests)
        with pytest.raises(ConfigurationError, match="running already"):
            worker.run(threading.Event())
    finally:
        stop.set()
        first.join(5)
    assert not first.is_alive()


def test_a_refused_environment_key_ends_run_with_the_error(
    hosted: Callable[..., Hosted], tmp_path: Path
) -> None:
    from req_managed_agents.errors import AuthenticationError, NotFoundError

    world = hosted()
    worker = world.worker(tmp_path, environment_key="envkey-wrong")
    with pytest.raises(AuthenticationError):
        worker.run(threading.Event())
    elsewhere = EnvironmentWorker(
        world.provider, "env_missing", environment_key=world.key, workdir=tmp_path, sandbox="none"
    )
    with pytest.raises((NotFoundError, AuthenticationError)):
        elsewhere.run(threading.Event())


def test_serve_forever_needs_the_main_thread(provider: ClaudeManagedAgents, tmp_path: Path) -> None:
    worker = make(provider, tmp_path)
    caught: list[BaseException] = []

    def serve() -> None:
        try:
            worker.serve_forever()
        except BaseException as exc:
            caught.append(exc)

    elsewhere = threading.Thread(target=serve)
    elsewhere.start()
    elsewhere.join(5)
    assert len(caught) == 1
    assert isinstance(caught[0], ConfigurationError)
    assert "run(stop)" in str(caught[0])


def test_every_session_toolset_gets_the_limits(
    provider: ClaudeManagedAgents, tmp_path: Path
) -> None:
    limits = ShellLimits(open_files=77)
    made = make(provider, tmp_path / "work", limits=limits)
    folder = tmp_path / "work" / "sesn_1"
    folder.mkdir()
    toolset = made.settings.toolset(folder)
    assert isinstance(toolset, AgentToolset)
    assert toolset.limits == limits
    context = ToolContext("toolu_1", SessionInfo("sesn_1", "test"), threading.Event())
    result = toolset.handle_tool_call("bash", {"command": "ulimit -Hn"}, context)
    assert isinstance(result, ToolResult)
    assert result.content == "77"
    unlimited = make(provider, tmp_path / "work", limits=None).settings.toolset(folder)
    assert isinstance(unlimited, AgentToolset)
    assert unlimited.limits is None
