"""Idempotent provisioning: content-addressed agents, environments and harnesses.

* :func:`provision` / :func:`teardown` - an agent (Claude: agent + environment; AgentCore:
  a harness brought to ``READY``; OpenAI: an agent; Gemini: an agent whose id is its name)
  named ``<base>_<digest8>`` (Gemini: ``<base>-<digest8>``) by its content, created only
  when neither the store nor the provider has it.
* :func:`ensure_environment`, :func:`tag`, :func:`resolve`, :func:`prune_environments` -
  the Claude environment lifecycle.
* :class:`Runtime`, :func:`bootstrap_script`, :func:`system_prompt_block`,
  :func:`required_hosts` - language runtimes installed with mise.
* :class:`Store`, :class:`MemoryStore`, :class:`FileStore`, :class:`RedisStore` - where
  handles are remembered (``RedisStore`` loads redis-py, the ``[redis]`` extra, when made).
"""

from req_managed_agents.provisioner._environments import (
    Bootstrap,
    EnvironmentHandle,
    PruneResult,
    ensure_environment,
    prune_environments,
    resolve,
    tag,
    wire_config,
)
from req_managed_agents.provisioner._identity import canonical_json, compose_name, digest, digest8
from req_managed_agents.provisioner._provision import (
    ClaudeAgentHandle,
    GeminiAgentHandle,
    HarnessHandle,
    OpenAIAgentHandle,
    provision,
    teardown,
)
from req_managed_agents.provisioner._runtimes import (
    bootstrap_script,
    required_hosts,
    system_prompt_block,
)
from req_managed_agents.provisioner._specs import AgentSpec, EnvironmentSpec, Runtime
from req_managed_agents.stores import FileStore, MemoryStore, RedisStore, Store

__all__ = [
    "AgentSpec",
    "Bootstrap",
    "ClaudeAgentHandle",
    "EnvironmentHandle",
    "EnvironmentSpec",
    "FileStore",
    "GeminiAgentHandle",
    "HarnessHandle",
    "MemoryStore",
    "OpenAIAgentHandle",
    "PruneResult",
    "RedisStore",
    "Runtime",
    "Store",
    "bootstrap_script",
    "canonical_json",
    "compose_name",
    "digest",
    "digest8",
    "ensure_environment",
    "provision",
    "prune_environments",
    "required_hosts",
    "resolve",
    "system_prompt_block",
    "tag",
    "teardown",
    "wire_config",
]
