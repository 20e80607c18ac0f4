"""The request bodies the OpenAI Agents API takes, as checks (see ``_schema``).

Each shape follows the ``openai`` SDK 3.60.0's params: ``agent_create_params``,
``agent_update_params``, ``agents/session_create_params``, ``agents/session_update_params``,
``agent_session_input_param`` (the inputs posted to a session), ``persisted_agent_tool_param``
(a saved agent's tools), ``agent_tool_param`` (a session's) and ``environment_param``. Limits
the SDK's docstrings state are enforced: metadata of at most 16 pairs (keys up to 64 and
values up to 512 characters), list pages of 1 to 100, a positive spend limit, an absolute
self-hosted workspace directory, a non-empty input.
"""

from __future__ import annotations

from req_managed_agents.testing.openai._schema import (
    Check,
    array,
    boolean,
    constant,
    either,
    integer,
    json_object,
    nullable,
    obj,
    one_of,
    string,
    string_map,
    tagged,
)

SERVICE_TIERS = ("auto", "default", "flex", "priority", "fast", "ultrafast")
_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")

_STRINGS = array(string())
METADATA = nullable(string_map(max_pairs=16, key_max=64, value_max=512))
_SERVICE_TIER = nullable(one_of(*SERVICE_TIERS))
_COMPACTION = nullable(obj(optional={"async": nullable(boolean)}))
_EXPERIMENTAL = obj(optional={"time_awareness": boolean})
_MULTI_AGENT = nullable(
    obj(required={"enabled": boolean}, optional={"max_concurrent_subagents": integer(1)})
)
_REASONING = nullable(
    obj(
        optional={
            "effort": nullable(one_of(*_EFFORTS)),
            "summary": nullable(one_of("concise", "detailed", "auto")),
        }
    )
)
_TEXT_FORMAT = tagged(
    {
        "text": obj(required={"type": constant("text")}),
        "json_schema": obj(required={"type": constant("json_schema"), "schema": json_object}),
    }
)
_TEXT = nullable(
    obj(
        optional={
            "format": nullable(_TEXT_FORMAT),
            "verbosity": nullable(one_of("low", "medium", "high")),
        }
    )
)


def _tools(*, persisted: bool) -> Check:
    """The tool list of a saved agent (``persisted``) or of a session: they differ in what
    an MCP transport may carry (a session's may hold credentials, a saved agent's not)."""
    http: dict[str, Check] = {"headers": nullable(string_map())}
    stdio: dict[str, Check] = {"args": nullable(_STRINGS), "env_vars": nullable(_STRINGS)}
    if not persisted:
        http["authorization"] = nullable(string())
        stdio["env"] = nullable(string_map())
    transport = tagged(
        {
            "http": obj({"type": constant("http"), "server_url": string(min_length=1)}, http),
            "stdio": obj(
                {"type": constant("stdio"), "command": string(min_length=1), "cwd": string()},
                stdio,
            ),
        }
    )
    location = {k: nullable(string()) for k in ("city", "country", "region", "timezone")}
    return nullable(
        array(
            tagged(
                {
                    "function": obj(
                        {
                            "type": constant("function"),
                            "name": string(min_length=1, max_length=64),
                            "description": string(),
                            "parameters": json_object,
                        },
                        {"defer_loading": boolean, "async": boolean},
                    ),
                    "tool_search": obj({"type": constant("tool_search")}),
                    "programmatic_tool_calling": obj(
                        {"type": constant("programmatic_tool_calling")}, {"enabled": boolean}
                    ),
                    "mcp": obj(
                        {
                            "type": constant("mcp"),
                            "server_label": string(min_length=1),
                            "transport": transport,
                        },
                        {
                            "allowed_tools": nullable(_STRINGS),
                            "connection_origin": nullable(one_of("service", "environment")),
                            "credential_id": nullable(string()),
                            "request_metadata": nullable(json_object),
                            "required": boolean,
                        },
                    ),
                    "web_search": obj(
                        {"type": constant("web_search")},
                        {
                            "allowed_domains": nullable(_STRINGS),
                            "context_size": nullable(one_of("low", "medium", "high")),
                            "location": nullable(obj(optional=location)),
                            "mode": nullable(one_of("disabled", "cached", "live")),
                        },
                    ),
                    "computer_use": obj(
                        {"type": constant("computer_use")}, {"include_screenshots": boolean}
                    ),
                    "automations": obj({"type": constant("automations")}),
                }
            )
        )
    )


PERSISTED_TOOLS = _tools(persisted=True)
SESSION_TOOLS = _tools(persisted=False)

_AGENT_FIELDS: dict[str, Check] = {
    "compaction": _COMPACTION,
    "experimental": _EXPERIMENTAL,
    "instructions": nullable(string()),
    "metadata": METADATA,
    "multi_agent": _MULTI_AGENT,
    "name": nullable(string()),
    "reasoning": _REASONING,
    "service_tier": _SERVICE_TIER,
    "text": _TEXT,
    "tools": PERSISTED_TOOLS,
}
AGENT_CREATE = obj({"model": string(min_length=1)}, _AGENT_FIELDS)
AGENT_UPDATE = obj(optional={**_AGENT_FIELDS, "model": string(min_length=1)})

_INPUT_CONTENT = tagged(
    {
        "input_text": obj({"type": constant("input_text"), "text": string()}),
        "input_image": obj({"type": constant("input_image"), "image_url": string(min_length=1)}),
    }
)
_MESSAGE = obj(
    {"role": constant("user"), "content": array(_INPUT_CONTENT, min_items=1)},
    {"type": constant("message")},
)
MESSAGES = array(_MESSAGE, min_items=1)

_HOSTED_ENVIRONMENT = obj(
    {"type": constant("openai_hosted")},
    {
        "capability_directories": nullable(_STRINGS),
        "container_size": one_of("small", "medium", "large"),
        "desktop": nullable(obj({"enabled": boolean})),
        "env": nullable(string_map()),
        "environment_id": string(),
        "environment_template_id": string(),
        "files": nullable(array(json_object)),
        "network": nullable(
            obj(
                {"access": one_of("enabled", "disabled", "restricted")},
                {"allowed_domains": nullable(_STRINGS), "blocked_domains": nullable(_STRINGS)},
            )
        ),
        "packages": nullable(
            obj(optional={k: nullable(_STRINGS) for k in ("npm", "python", "system")})
        ),
        "plugins": nullable(array(json_object)),
        "setup_commands": nullable(array(json_object)),
        "skills": nullable(array(json_object)),
    },
)
ENVIRONMENT = tagged(
    {
        "none": obj({"type": constant("none")}),
        "openai_hosted": _HOSTED_ENVIRONMENT,
        "self_hosted": obj(
            {"type": constant("self_hosted"), "workspace_directory": string(min_length=1)},
            {"capability_directories": nullable(_STRINGS)},
        ),
    }
)

_SPEND_CONTROL = nullable(obj({"limit": nullable(integer(1))}))
_PROMPT_CACHE = nullable(obj(optional={"ttl": one_of("30m", "12h")}))
_REVIEW = one_of("none", "auto_review")
_VAULT_IDS = nullable(_STRINGS)

SESSION_CREATE = obj(
    {"environment": ENVIRONMENT},
    {
        "agent": obj(
            optional={
                **{k: v for k, v in _AGENT_FIELDS.items() if k not in ("metadata", "name")},
                "model": string(min_length=1),
                "tools": SESSION_TOOLS,
            }
        ),
        "agent_id": string(min_length=1),
        "input": nullable(
            either("a string or an array", (str, string(min_length=1)), (list, MESSAGES))
        ),
        "metadata": METADATA,
        "prompt_cache_options": _PROMPT_CACHE,
        "review": _REVIEW,
        "spend_control": _SPEND_CONTROL,
        "stream": boolean,
        "stream_options": obj(optional={"include_obfuscation": boolean}),
        "vault_ids": _VAULT_IDS,
    },
)
SESSION_UPDATE = obj(
    optional={
        "agent": obj(
            optional={
                "model": string(min_length=1),
                "reasoning": obj(optional={"effort": nullable(one_of(*_EFFORTS))}),
                "service_tier": _SERVICE_TIER,
                "tools": SESSION_TOOLS,
            }
        ),
        "metadata": METADATA,
        "prompt_cache_options": _PROMPT_CACHE,
        "review": _REVIEW,
        "spend_control": _SPEND_CONTROL,
        "vault_ids": _VAULT_IDS,
    }
)

_TOOL_OUTPUT = either("a string or an array", (str, string()), (list, array(_INPUT_CONTENT)))
_BROWSER_AUTHENTICATION = obj(
    {
        "type": constant("browser_authentication"),
        "action": one_of("submit", "cancel"),
    },
    {
        "fields": array(obj({"field_id": string(), "value": string()})),
        "selected_option": nullable(string()),
    },
)
SESSION_INPUT = tagged(
    {
        "agent.session.input.message": obj(
            {"type": constant("agent.session.input.message"), "input": MESSAGES}
        ),
        "agent.session.input.cancel": obj({"type": constant("agent.session.input.cancel")}),
        "agent.session.input.tool_result": obj(
            {
                "type": constant("agent.session.input.tool_result"),
                "call_id": string(min_length=1),
                "turn_id": string(min_length=1),
                "success": boolean,
            },
            {"error": nullable(string()), "output": nullable(_TOOL_OUTPUT)},
        ),
        "agent.session.input.mcp_approval_request_result": obj(
            {
                "type": constant("agent.session.input.mcp_approval_request_result"),
                "request_id": string(min_length=1),
                "response": obj(
                    {
                        "type": constant("mcp_tool_call"),
                        "decision": one_of("approve", "deny", "cancel"),
                    }
                ),
            }
        ),
        "agent.session.input.computer_use_approval_request_result": obj(
            {
                "type": constant("agent.session.input.computer_use_approval_request_result"),
                "request_id": string(min_length=1),
                "response": tagged(
                    {
                        "browser_authentication": _BROWSER_AUTHENTICATION,
                        "browser_origin_access": obj(
                            {
                                "type": constant("browser_origin_access"),
                                "decision": one_of("approve", "deny", "cancel"),
                            }
                        ),
                    }
                ),
            }
        ),
    }
)
EVENTS_BODY = obj({"events": array(SESSION_INPUT, min_items=1)})
