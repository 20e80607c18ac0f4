"""Local MCP servers on the command line: ``--mcp 'CMD ARGS'`` for ``rma run`` and
``rma batch``, and ``"mcp_servers"`` entries in a spec file.

Each server's tools join the run's ``Tools`` registry (``Tools.include``), under their own
names unless a ``prefix`` is given: ``--mcp`` takes a command line, or a JSON object written
as a spec entry when it needs a prefix, an allow list or variables. The servers are started
and their tools listed before anything is sent, so a command that does not start, or two
tools declared under one name, is the command line's mistake (status 2), not a failed run.
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Mapping
from contextlib import ExitStack
from typing import Any, TextIO

from req_managed_agents.cli._common import CliError
from req_managed_agents.errors import ConfigurationError
from req_managed_agents.tools._handler import Handler
from req_managed_agents.tools._registry import Tools

__all__ = [
    "SERVER_KEYS",
    "add_mcp_flag",
    "include_servers",
    "server_entry",
    "show_mapping",
    "spec_declarations",
]

SERVER_KEYS = frozenset({"command", "args", "env", "prefix", "allow", "confirm"})
_CONFIRMS = ("destructive", "always", "never")
# What include() takes besides the server: prefix, allow and confirm.
_Include = dict[str, Any]
"""The members of one ``"mcp_servers"`` entry of a spec file."""

_FLAG_HINT = (
    "--mcp takes the server's command line in one word, e.g. --mcp 'npx -y PACKAGE DIR', "
    'or a JSON object: --mcp \'{"command": "npx", "args": [...], "prefix": "files_"}\''
)


def add_mcp_flag(parser: argparse.ArgumentParser) -> None:
    """``--mcp 'CMD ARGS'``, repeatable."""
    parser.add_argument(
        "--mcp",
        action="append",
        default=[],
        metavar="'CMD ARGS'",
        help="a local MCP server to start: its command line, split as a shell would, or a "
        'JSON object as in a spec\'s "mcp_servers" ({"command", "args", "env", "prefix", '
        '"allow", "confirm"}); its tools join --tools, under their own names unless a prefix '
        'is given; those it marks destructive are denied unless "confirm" is "never" (or '
        "--tools has handle_confirmation). Repeatable",
    )


def server_entry(where: str, entry: Any) -> tuple[Any, _Include]:
    """``(McpServer, include options)`` from one spec entry ``{"command", "args", "env",
    "prefix", "allow", "confirm"}``; a member of the wrong shape raises ``ValueError``
    naming it."""
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where} must be an object with a command")
    unknown = sorted(set(entry) - SERVER_KEYS)
    if unknown:
        raise ValueError(f"{where} has unknown member(s) {', '.join(map(repr, unknown))}")
    command, args, env = entry.get("command"), entry.get("args", []), entry.get("env", {})
    prefix, allow = entry.get("prefix"), entry.get("allow")
    if not isinstance(command, str) or not command:
        raise ValueError(f'{where}."command" must be a non-empty string')
    if not _strings(args):
        raise ValueError(f'{where}."args" must be an array of strings')
    if not isinstance(env, Mapping) or not all(isinstance(v, str) for v in env.values()):
        raise ValueError(f'{where}."env" must be an object of strings')
    if prefix is not None and not isinstance(prefix, str):
        raise ValueError(f'{where}."prefix" must be a string')
    if allow is not None and not _strings(allow):
        raise ValueError(f'{where}."allow" must be an array of tool names')
    confirm = entry.get("confirm", "destructive")
    if confirm not in _CONFIRMS:
        raise ValueError(f'{where}."confirm" must be one of {", ".join(map(repr, _CONFIRMS))}')
    from req_managed_agents.mcp import McpServer

    options = {"prefix": prefix, "allow": allow, "confirm": confirm}
    return McpServer(command, args, env=env), options


def spec_declarations(where: str, entries: list[Any]) -> list[dict[str, Any]]:
    """The declarations of the tools of a spec's ``"mcp_servers"``: each server started,
    its tools listed, and stopped again (a run starts it with ``--mcp``). An entry of the
    wrong shape raises ``ValueError``; a server that does not start, ``CliError``."""
    tools = Tools()
    with ExitStack() as stack:
        for index, entry in enumerate(entries):
            server, options = server_entry(f"{where}[{index}]", entry)
            try:
                tools.include(stack.enter_context(server), **options)
            except ConfigurationError as exc:
                raise ValueError(f'{where}[{index}]."prefix": {exc}') from None
        return _declared(tools)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _flag_server(text: str) -> tuple[Any, _Include]:
    """``(McpServer, include options)`` from a command line, or from a JSON object written
    as a spec's ``"mcp_servers"`` entry (for a prefix, an allow list, variables or
    ``confirm``)."""
    if text.lstrip().startswith("{"):
        try:
            return server_entry("--mcp", json.loads(text))
        except ValueError as exc:  # a JSONDecodeError is one too
            raise CliError(f"--mcp {text!r}: {exc}", hint=_FLAG_HINT) from None
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise CliError(f"--mcp {text!r}: {exc}", hint=_FLAG_HINT) from None
    if not words:
        raise CliError("--mcp needs a command", hint=_FLAG_HINT)
    from req_managed_agents.mcp import McpServer

    return McpServer(words[0], words[1:]), {}


def include_servers(handler: Handler, commands: list[str], stack: ExitStack) -> Handler:
    """``handler`` with the tools of each ``--mcp`` server, which ``stack`` stops. The
    servers are started and listed here: a mistake shows before anything is sent."""
    if not commands:
        return handler
    if not isinstance(handler, Tools):
        raise CliError(
            "--mcp adds tools to a Tools registry; --tools names another kind of handler",
            hint="name a Tools registry with --tools, or leave --tools out",
        )
    servers = [_flag_server(text) for text in commands]
    for server, options in servers:
        try:
            handler.include(stack.enter_context(server), **options)
        except ConfigurationError as exc:
            raise CliError(f"--mcp: {exc}", hint=_FLAG_HINT) from None
    _declared(handler)
    return handler


def _declared(tools: Tools) -> list[dict[str, Any]]:
    """Every declaration of ``tools``, the MCP servers started; a server that does not
    start, or a name declared twice, is a usage error."""
    from req_managed_agents.mcp import McpServerError

    try:
        return tools.schemas()
    except (McpServerError, ConfigurationError) as exc:
        raise CliError(str(exc), hint="check the MCP server's command line and its tools") from None


def show_mapping(tools: Tools, err: TextIO) -> None:
    """One line per MCP tool: the name the agent sees, the server and the server's name."""
    for name, (server, tool) in tools.mcp_tools().items():
        err.write(f"rma: MCP tool {name} -> {tool} of the server {server!r}\n")
    err.flush()
