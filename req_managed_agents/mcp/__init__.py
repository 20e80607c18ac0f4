"""A synchronous MCP client: a local server's tools, callable from any thread.

``McpServer`` starts a server as a child process (stdio) or reaches one over streamable
HTTP, speaks both protocol eras (the stateless ``2026-07-28`` and the ``initialize``
handshake back to ``2024-11-05``), and needs nothing beyond the standard library and
``requests``::

    with McpServer("npx", ["-y", "@modelcontextprotocol/server-filesystem", "."]) as files:
        tools = files.list_tools()
        result = files.call_tool("read_text_file", {"path": "README.md"})
"""

from req_managed_agents.mcp._errors import McpConnectionLost, McpServerError
from req_managed_agents.mcp._server import McpServer
from req_managed_agents.mcp._values import McpProgress, McpTool, McpToolResult

__all__ = [
    "McpConnectionLost",
    "McpProgress",
    "McpServer",
    "McpServerError",
    "McpTool",
    "McpToolResult",
]
