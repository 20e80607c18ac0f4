"""What to provision: agents, environments and the language runtimes an environment declares.

Specs are frozen values whose content (not their name) is their identity: the digest of
:meth:`AgentSpec.identity` or :meth:`EnvironmentSpec.identity` names the provider resource,
so changing any part of the content makes a new resource and an unchanged spec finds the
existing one.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from req_managed_agents.provisioner._identity import digest
from req_managed_agents.tools._registry import Tools

__all__ = ["AgentSpec", "EnvironmentSpec", "Runtime"]

# The version is pasted into a shell script: this charset (and a leading letter or digit, so
# it cannot read as an option) is what keeps it from injecting anything.
_VERSION = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+\-]{0,63}\Z")
_LANG = re.compile(r"^[a-z][a-z0-9_\-]{0,31}\Z")
_VIAS = frozenset({"mise"})


@dataclass(frozen=True)
class Runtime:
    """A language runtime installed in the environment, e.g. ``Runtime("python", "3.12")``."""

    lang: str
    version: str
    via: str = "mise"

    def __post_init__(self) -> None:
        if not isinstance(self.lang, str) or not _LANG.match(self.lang):
            raise ValueError(f"runtime language {self.lang!r} must match {_LANG.pattern}")
        if not isinstance(self.version, str) or not _VERSION.match(self.version):
            raise ValueError(
                f"runtime version {self.version!r} must be letters, digits, '.', '+' or '-', "
                "starting with a letter or digit"
            )
        if self.via not in _VIAS:
            raise ValueError(f"runtimes can only be installed via mise, not {self.via!r}")

    @classmethod
    def coerce(cls, value: Runtime | Mapping[str, Any]) -> Runtime:
        """A :class:`Runtime` from itself or a ``{"lang", "version", "via"?}`` mapping."""
        if isinstance(value, Runtime):
            return value
        if isinstance(value, Mapping):
            lang, version = value.get("lang"), value.get("version")
            if lang is None or version is None:
                raise ValueError(
                    f"a runtime mapping needs 'lang' and 'version', got {dict(value)!r}"
                )
            return cls(str(lang), str(version), value.get("via", "mise"))
        raise TypeError(f"a runtime must be a Runtime or a mapping, not {type(value).__name__}")

    def identity(self) -> dict[str, str]:
        """The content that names the resource (its digest is taken over this)."""
        return {"lang": self.lang, "version": self.version, "via": self.via}


@dataclass(frozen=True)
class EnvironmentSpec:
    """An environment: the provider's own ``config`` (passed verbatim) plus runtimes.

    For Claude, ``config`` is the environment ``config`` object (``{"type": "cloud",
    "networking": ..., "packages": ...}``). For AgentCore, it is either the ``CreateHarness``
    ``environment`` object (``{"agentCoreRuntimeEnvironment": {...}}``, sent under that
    member) or ``CreateHarness`` members such as ``environment``, ``environmentVariables``
    or ``environmentArtifact`` (merged into the request).
    """

    config: Mapping[str, Any] = field(default_factory=dict)
    runtimes: Sequence[Runtime] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.config, Mapping):
            raise TypeError("an environment config must be a mapping")
        # A deep copy: a caller changing a nested object later must not change the digest.
        object.__setattr__(self, "config", copy.deepcopy(dict(self.config)))
        object.__setattr__(self, "runtimes", tuple(Runtime.coerce(r) for r in self.runtimes))

    def identity(self) -> dict[str, Any]:
        """The content that names the resource (its digest is taken over this)."""
        return {"config": dict(self.config), "runtimes": [r.identity() for r in self.runtimes]}

    @property
    def digest(self) -> str:
        """The full 64-hex digest of this environment's content."""
        return digest(self.identity())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EnvironmentSpec:
        """From ``{"config": {...}, "runtimes": [...]}`` (the JSON of ``rma provision``)."""
        unknown = set(data) - {"config", "runtimes"}
        if unknown:
            raise ValueError(f"unknown environment spec keys: {', '.join(sorted(unknown))}")
        return cls(config=data.get("config") or {}, runtimes=tuple(data.get("runtimes") or ()))


@dataclass(frozen=True)
class AgentSpec:
    """An agent: instructions, model and custom tools; ``name`` is the base of its name.

    ``tools`` takes a :class:`~req_managed_agents.Tools` registry or neutral declarations
    (``{"name", "description", "input_schema"}``); ``model_config`` holds extra model settings
    (Claude: merged into the model object, e.g. ``{"effort": "high"}``; AgentCore: merged into
    ``bedrockModelConfig``, e.g. ``{"maxTokens": 4096}``).
    """

    name: str
    system_prompt: str
    model: str
    tools: Sequence[Mapping[str, Any]] | Tools = ()
    model_config: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ValueError("an agent spec needs a name")
        if not isinstance(self.system_prompt, str):
            raise TypeError("system_prompt must be a string")
        if not self.model or not isinstance(self.model, str):
            raise ValueError("an agent spec needs a model id")
        tools = self.tools.schemas() if isinstance(self.tools, Tools) else self.tools
        declarations = tuple(copy.deepcopy(dict(tool)) for tool in tools)
        for tool in declarations:
            missing = {"name", "description", "input_schema"} - set(tool)
            if missing:
                raise ValueError(f"tool declaration lacks {', '.join(sorted(missing))}: {tool}")
        object.__setattr__(self, "tools", declarations)
        if self.model_config is not None:
            object.__setattr__(self, "model_config", copy.deepcopy(dict(self.model_config)))

    def identity(self) -> dict[str, Any]:
        """What the agent is, without its name (two names for one content share a digest)."""
        return {
            "system_prompt": self.system_prompt,
            "model": self.model,
            "tools": [dict(tool) for tool in self.declarations],
            "model_config": dict(self.model_config) if self.model_config is not None else None,
        }

    @property
    def digest(self) -> str:
        return digest(self.identity())

    @property
    def declarations(self) -> tuple[Mapping[str, Any], ...]:
        """The tools as ``{"name", "description", "input_schema"}`` declarations."""
        return tuple(self.tools)  # type: ignore[arg-type]  # __post_init__ froze them

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentSpec:
        """From the ``agent`` object of an ``rma provision`` spec file."""
        unknown = set(data) - {"name", "system_prompt", "model", "tools", "model_config"}
        if unknown:
            raise ValueError(f"unknown agent spec keys: {', '.join(sorted(unknown))}")
        return cls(
            name=data.get("name", ""),
            system_prompt=data.get("system_prompt", ""),
            model=data.get("model", ""),
            tools=tuple(data.get("tools") or ()),
            model_config=data.get("model_config"),
        )
