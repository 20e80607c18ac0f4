from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from req_managed_agents import Tools
from req_managed_agents.provisioner import AgentSpec, EnvironmentSpec, Runtime, digest

HOSTILE_VERSIONS = [
    "1.0; rm -rf /",
    "$(id)",
    "`id`",
    "1.0 && x",
    "1.0 || x",
    "1.0|sh",
    "1.0>out",
    "-rf",
    "--global",
    "+1",
    ".1",
    "",
    " 3.12",
    "3.12 ",
    "3.12\nrm -rf /",
    "\n3.12",
    "3.12\t",
    "'3.12'",
    '"3.12"',
    "3.12'",
    "a/b",
    "~",
    "3.12*",
    "1" * 65,
    "\u0663.12",  # ARABIC-INDIC DIGIT THREE: a digit to str.isdigit, not to the shell guard
]
HOSTILE_LANGS = [
    "",
    "Python",
    "py thon",
    "python;id",
    "$(id)",
    "`id`",
    "1python",
    "-rf",
    "_python",
    "py/thon",
    "python@3",
    "python'",
    "a" * 33,
    "\u00e9lixir",
]


# --- Runtime ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lang", "version"),
    [
        ("python", "3.12"),
        ("node", "20.11.1"),
        ("erlang", "27.0+build-1"),
        ("go", "latest"),
        ("rust-nightly", "1.80.0-beta"),
        ("python", "1" * 64),
        ("a" * 32, "1"),
    ],
)
def test_runtime_accepts_plain_versions(lang: str, version: str) -> None:
    runtime = Runtime(lang, version)
    assert (runtime.lang, runtime.version, runtime.via) == (lang, version, "mise")
    assert runtime.identity() == {"lang": lang, "version": version, "via": "mise"}


@pytest.mark.parametrize("version", HOSTILE_VERSIONS, ids=repr)
def test_runtime_rejects_hostile_versions(version: str) -> None:
    with pytest.raises(ValueError, match="runtime version"):
        Runtime("python", version)


@pytest.mark.parametrize(("lang", "version"), [("python", "3.12\n"), ("python\n", "3.12")])
def test_runtime_rejects_a_trailing_newline(lang: str, version: str) -> None:
    with pytest.raises(ValueError, match="runtime"):
        Runtime(lang, version)


@pytest.mark.parametrize("lang", HOSTILE_LANGS, ids=repr)
def test_runtime_rejects_hostile_languages(lang: str) -> None:
    with pytest.raises(ValueError, match="runtime language"):
        Runtime(lang, "1.0")


@pytest.mark.parametrize("version", [3.12, 20, None, b"3.12"], ids=repr)
def test_runtime_rejects_non_string_versions(version: Any) -> None:
    with pytest.raises(ValueError, match="runtime version"):
        Runtime("python", version)


@pytest.mark.parametrize("via", ["apt", "asdf", "MISE", "", "mise "])
def test_runtime_only_installs_via_mise(via: str) -> None:
    with pytest.raises(ValueError, match="via mise"):
        Runtime("python", "3.12", via)


def test_runtime_is_frozen_and_hashable() -> None:
    runtime = Runtime("python", "3.12")
    with pytest.raises(dataclasses.FrozenInstanceError):
        runtime.version = "$(id)"  # type: ignore[misc]
    assert {runtime, Runtime("python", "3.12")} == {runtime}


def test_coerce_passes_runtimes_through_and_reads_mappings() -> None:
    runtime = Runtime("python", "3.12")
    assert Runtime.coerce(runtime) is runtime
    assert Runtime.coerce({"lang": "python", "version": "3.12"}) == runtime
    assert Runtime.coerce({"lang": "node", "version": 20}) == Runtime("node", "20")
    assert Runtime.coerce({"lang": "go", "version": "1.22", "via": "mise"}) == Runtime("go", "1.22")


@pytest.mark.parametrize(
    "value",
    [
        {"lang": "python", "version": "$(id)"},
        {"lang": "Python", "version": "3.12"},
        {"lang": "python", "version": "3.12", "via": "apt"},
        {"version": "3.12"},
    ],
)
def test_coerce_validates_mappings(value: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="runtime"):
        Runtime.coerce(value)


def test_coerce_rejects_a_mapping_without_version() -> None:
    with pytest.raises(ValueError, match="version"):
        Runtime.coerce({"lang": "python"})


@pytest.mark.parametrize("value", ["python@3.12", ("python", "3.12"), None, 3])
def test_coerce_rejects_other_types(value: Any) -> None:
    with pytest.raises(TypeError, match="Runtime or a mapping"):
        Runtime.coerce(value)


# --- EnvironmentSpec ------------------------------------------------------------------------


def test_environment_spec_coerces_runtimes_into_a_tuple() -> None:
    runtimes: list[Any] = [{"lang": "python", "version": "3.12"}, Runtime("node", "20")]
    spec = EnvironmentSpec({"type": "cloud"}, runtimes)
    assert spec.runtimes == (Runtime("python", "3.12"), Runtime("node", "20"))
    runtimes.append(Runtime("go", "1.22"))
    assert len(spec.runtimes) == 2


def test_environment_spec_rejects_bad_runtimes_and_config() -> None:
    with pytest.raises(ValueError, match="runtime version"):
        EnvironmentSpec(runtimes=[{"lang": "python", "version": "1; id"}])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="mapping"):
        EnvironmentSpec(config=[("type", "cloud")])  # type: ignore[arg-type]


def test_environment_spec_copies_config_and_is_frozen() -> None:
    config: dict[str, Any] = {"type": "cloud"}
    spec = EnvironmentSpec(config)
    before = spec.digest
    config["type"] = "changed"
    config["extra"] = 1
    assert spec.config == {"type": "cloud"}
    assert spec.digest == before
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.config = {}  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.runtimes = ()  # type: ignore[misc]


def test_environment_spec_is_not_changed_by_nested_caller_mutation() -> None:
    hosts = ["pypi.org"]
    spec = EnvironmentSpec({"networking": {"type": "limited", "allowed_hosts": hosts}})
    before = spec.digest
    hosts.append("evil.example")
    assert spec.digest == before


def test_environment_digest_is_the_digest_of_its_identity() -> None:
    spec = EnvironmentSpec({"type": "cloud"}, [Runtime("python", "3.12")])
    assert spec.identity() == {
        "config": {"type": "cloud"},
        "runtimes": [{"lang": "python", "version": "3.12", "via": "mise"}],
    }
    assert spec.digest == digest(spec.identity())
    assert re.fullmatch(r"[0-9a-f]{64}", spec.digest)
    assert EnvironmentSpec().digest == digest({"config": {}, "runtimes": []})


def test_environment_digest_follows_content() -> None:
    base = EnvironmentSpec({"type": "cloud"}, [Runtime("python", "3.12")])
    assert EnvironmentSpec({"type": "cloud"}, [Runtime("python", "3.12")]).digest == base.digest
    assert EnvironmentSpec({"type": "cloud"}, [Runtime("python", "3.13")]).digest != base.digest
    assert EnvironmentSpec({"type": "cloud"}).digest != base.digest
    assert EnvironmentSpec({"type": "other"}, [Runtime("python", "3.12")]).digest != base.digest
    both = [Runtime("python", "3.12"), Runtime("node", "20")]
    assert EnvironmentSpec(runtimes=both).digest != EnvironmentSpec(runtimes=both[::-1]).digest


def test_environment_digest_ignores_dict_order() -> None:
    first = EnvironmentSpec(
        {"type": "cloud", "networking": {"type": "limited", "allowed_hosts": ["a", "b"]}},
        [{"lang": "python", "version": "3.12", "via": "mise"}],  # type: ignore[list-item]
    )
    second = EnvironmentSpec(
        {"networking": {"allowed_hosts": ["a", "b"], "type": "limited"}, "type": "cloud"},
        [{"via": "mise", "version": "3.12", "lang": "python"}],  # type: ignore[list-item]
    )
    assert first.digest == second.digest


def test_environment_from_dict() -> None:
    spec = EnvironmentSpec.from_dict(
        {"config": {"type": "cloud"}, "runtimes": [{"lang": "python", "version": "3.12"}]}
    )
    assert spec == EnvironmentSpec({"type": "cloud"}, [Runtime("python", "3.12")])
    assert EnvironmentSpec.from_dict({}) == EnvironmentSpec()
    assert EnvironmentSpec.from_dict({"config": None, "runtimes": None}) == EnvironmentSpec()


def test_environment_from_dict_rejects_unknown_keys() -> None:
    with pytest.raises(ValueError, match="unknown environment spec keys: name, type"):
        EnvironmentSpec.from_dict({"config": {}, "type": "cloud", "name": "env"})


# --- AgentSpec ----------------------------------------------------------------------------

SEARCH = {
    "name": "search",
    "description": "Search the docs.",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
}


def make_tools() -> Tools:
    tools = Tools()

    @tools.tool
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        return key

    return tools


def test_agent_spec_requires_name_and_model() -> None:
    with pytest.raises(ValueError, match="name"):
        AgentSpec("", "prompt", "claude-x")
    with pytest.raises(ValueError, match="model"):
        AgentSpec("agent", "prompt", "")
    with pytest.raises(TypeError, match="system_prompt"):
        AgentSpec("agent", None, "claude-x")  # type: ignore[arg-type]


def test_agent_spec_accepts_a_tools_registry() -> None:
    tools = make_tools()
    spec = AgentSpec("agent", "prompt", "claude-x", tools=tools)  # type: ignore[arg-type]
    assert spec.tools == tuple(tools.schemas())
    (declaration,) = spec.tools
    assert declaration["name"] == "lookup"
    assert declaration["description"] == "Look a key up."
    assert declaration["input_schema"]["properties"]["key"]["type"] == "string"
    # A registry and the declarations it produces are the same content.
    same = AgentSpec("agent", "prompt", "claude-x", tools=tools.schemas())
    assert same.digest == spec.digest


def test_agent_spec_accepts_declarations_and_copies_them() -> None:
    declaration = dict(SEARCH)
    spec = AgentSpec("agent", "prompt", "claude-x", tools=[declaration])
    before = spec.digest
    assert spec.tools == (SEARCH,)
    declaration["description"] = "changed"
    assert spec.tools == (SEARCH,)
    assert spec.digest == before


@pytest.mark.parametrize("missing", ["name", "description", "input_schema"])
def test_agent_spec_rejects_incomplete_declarations(missing: str) -> None:
    declaration = {k: v for k, v in SEARCH.items() if k != missing}
    with pytest.raises(ValueError, match=f"lacks {missing}"):
        AgentSpec("agent", "prompt", "claude-x", tools=[declaration])


def test_agent_identity_excludes_the_name() -> None:
    first = AgentSpec("alpha", "prompt", "claude-x", tools=[SEARCH], model_config={"e": 1})
    second = AgentSpec("beta", "prompt", "claude-x", tools=[SEARCH], model_config={"e": 1})
    assert first.identity() == second.identity()
    assert "name" not in first.identity()
    assert first.digest == second.digest
    assert re.fullmatch(r"[0-9a-f]{64}", first.digest)


@pytest.mark.parametrize(
    "change",
    [
        {"system_prompt": "other prompt"},
        {"model": "claude-y"},
        {"tools": ()},
        {"tools": [{**SEARCH, "description": "Search harder."}]},
        {"model_config": {"e": 2}},
        {"model_config": None},
    ],
)
def test_agent_digest_follows_content(change: dict[str, Any]) -> None:
    fields: dict[str, Any] = {
        "name": "agent",
        "system_prompt": "prompt",
        "model": "claude-x",
        "tools": [SEARCH],
        "model_config": {"e": 1},
    }
    base = AgentSpec(**fields)
    assert AgentSpec(**{**fields, **change}).digest != base.digest


def test_agent_from_dict() -> None:
    spec = AgentSpec.from_dict(
        {"name": "agent", "system_prompt": "p", "model": "claude-x", "tools": [SEARCH]}
    )
    assert spec == AgentSpec("agent", "p", "claude-x", tools=[SEARCH])
    with pytest.raises(ValueError, match="unknown agent spec keys: temperature"):
        AgentSpec.from_dict({"name": "a", "model": "m", "temperature": 1})
    with pytest.raises(ValueError, match="name"):
        AgentSpec.from_dict({"model": "claude-x"})
