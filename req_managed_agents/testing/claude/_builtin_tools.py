"""The sandbox tools of the built-in toolset ``agent_toolset_20260401``, and their inputs.

Six of its tools act on the session's sandbox: ``bash``, ``read``, ``write``, ``edit``,
``glob`` and ``grep``. In a self-hosted environment the sandbox is the user's machine, so a
call to one of them goes to the client as an ``agent.tool_use`` and waits for its
``user.tool_result``; the web tools still run on the service. A scripted call to a sandbox
tool must carry the input the API gives it (the official SDK's input models), so that a
client's toolset meets in tests what it meets in production: :func:`check_sandbox_call`
refuses any other input when the turn is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Callable

    from req_managed_agents.testing._script import ToolCall


def _integers(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    )


# Each JSON type a field may have: what it is called, and the check of a value.
_CHECKS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "string": ("a string", lambda value: isinstance(value, str)),
    "boolean": ("a boolean", lambda value: isinstance(value, bool)),
    "integer": ("an integer", lambda value: isinstance(value, int) and not isinstance(value, bool)),
    "integers": ("a list of integers", _integers),
}

# Each sandbox tool's input fields: name -> (JSON type, required).
SANDBOX_TOOLS: Mapping[str, Mapping[str, tuple[str, bool]]] = {
    "bash": {
        "command": ("string", False),
        "restart": ("boolean", False),
        "timeout_ms": ("integer", False),
    },
    "read": {"file_path": ("string", True), "view_range": ("integers", False)},
    "write": {"file_path": ("string", True), "content": ("string", True)},
    "edit": {
        "file_path": ("string", True),
        "old_string": ("string", True),
        "new_string": ("string", True),
        "replace_all": ("boolean", False),
    },
    "glob": {"pattern": ("string", True), "path": ("string", False)},
    "grep": {"pattern": ("string", True), "path": ("string", False)},
}


def is_sandbox_call(call: ToolCall) -> bool:
    """Whether ``call`` is a built-in toolset call that runs in the session's sandbox."""
    return call.mcp_server is None and call.name in SANDBOX_TOOLS


def check_sandbox_call(call: ToolCall) -> None:
    """Raise ``ValueError`` when a sandbox tool call's input is not one the API sends."""
    if not is_sandbox_call(call):
        return
    fields = SANDBOX_TOOLS[call.name]
    where = f"the built-in {call.name!r} call's input"
    unknown = sorted(set(call.input) - set(fields))
    if unknown:
        raise ValueError(f"{where} has fields the tool does not take: {unknown}")
    for name, (kind, required) in fields.items():
        if name not in call.input:
            if required:
                raise ValueError(f"{where} needs {name!r}")
            continue
        value = call.input[name]
        what, fits = _CHECKS[kind]
        if value is not None and not fits(value):
            raise ValueError(f"{where}: {name!r} must be {what}, not {value!r}")
    if call.name == "bash" and not call.input.get("command") and not call.input.get("restart"):
        raise ValueError(f"{where} needs a 'command' (or 'restart': True)")
