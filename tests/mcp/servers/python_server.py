"""An MCP server written with the ``mcp`` package (Python >= 3.10), run by the tests over
stdio (``python python_server.py``) or streamable HTTP (``python python_server.py http PORT``).
It speaks both protocol eras (the client's first request decides which); with
``--handshake-only`` it answers ``server/discover`` as the servers of the handshake era do
(method not found), so a client must fall back to ``initialize``; with ``--linger`` it
stays alive after its input ends, so only a signal ends it."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from pydantic import BaseModel

# A 1x1 transparent PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)

# The markers of the `wait` calls in flight, by request id: a `notifications/cancelled`
# naming one writes `<marker>.told`, so a test can tell it from a shutdown's cancellation.
WAITING: dict[str, Path] = {}


def note_cancellation(params: Any) -> None:
    if isinstance(params, dict):
        marker = WAITING.get(str(params.get("requestId")))
        if marker is not None:
            marker.with_name(marker.name + ".told").write_text(str(params.get("reason")))


async def note_cancellations(ctx: Any, call_next: Any) -> Any:
    if ctx.method == "notifications/cancelled":
        note_cancellation(ctx.params)
    return await call_next(ctx)


def note_cancellations_as_read() -> None:
    """Over stdio, note a cancellation as soon as its line is read, before the server
    handles it: a client that closes the input right after it (Ctrl-C, then close) makes
    the server cancel its handlers as it shuts down, the one that would note it included."""
    read_end, write_end = os.pipe()
    source = os.dup(0)
    os.dup2(read_end, 0)
    os.close(read_end)

    def relay() -> None:
        with open(source, "rb") as lines, open(write_end, "wb", buffering=0) as server_input:
            for line in lines:
                with contextlib.suppress(ValueError):
                    message = json.loads(line)
                    if isinstance(message, dict) and message.get("method") == (
                        "notifications/cancelled"
                    ):
                        note_cancellation(message.get("params"))
                try:
                    server_input.write(line)
                except OSError:  # the server has gone
                    return

    threading.Thread(target=relay, daemon=True).start()


server = MCPServer("python-test-server", middleware=[note_cancellations])


class Forecast(BaseModel):
    city: str
    celsius: float


class Answer(BaseModel):
    name: str


@server.tool(description="Echo the text back.", annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> str:
    return text


@server.tool(description="A one-pixel image.")
def pixel() -> Image:
    return Image(data=PIXEL, format="png")


@server.tool(description="The weather, as structured content.")
def forecast(city: str) -> Forecast:
    return Forecast(city=city, celsius=21.5)


@server.tool(description="Structured content only, no content blocks.")
def totals() -> CallToolResult:
    return CallToolResult(content=[], structuredContent={"count": 3})


@server.tool(description="Always fails.", annotations=ToolAnnotations(destructiveHint=True))
def fail(reason: str) -> str:
    raise ValueError(reason)


@server.tool(description="Report progress for each step, then answer.")
async def count(steps: int, ctx: Context) -> str:
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted {steps}"


@server.tool(
    description="Wait until cancelled; writes `marker` when it starts and when cancelled "
    "(and `marker.told` when notifications/cancelled named the call)."
)
async def wait(marker: str, ctx: Context) -> str:
    path = Path(marker)
    WAITING[str(ctx.request_id)] = path
    path.write_text("started")
    await ctx.report_progress(0, None, "waiting")
    try:
        await anyio.sleep(120)
    except anyio.get_cancelled_exc_class():
        path.write_text("cancelled")
        raise
    return "waited"


@server.tool(description="Every other kind of content: audio, a link, embedded resources.")
def media() -> list[AudioContent | ResourceLink | EmbeddedResource | TextContent]:
    return [
        TextContent(type="text", text="four blocks follow"),
        AudioContent(
            type="audio", data=base64.b64encode(b"RIFF0000").decode(), mimeType="audio/wav"
        ),
        ResourceLink(
            type="resource_link", uri="file:///notes.md", name="notes", mimeType="text/markdown"
        ),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(uri="file:///a.txt", mimeType="text/plain", text="A"),
        ),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(
                uri="file:///pixel.png", mimeType="image/png", blob=base64.b64encode(PIXEL).decode()
            ),
        ),
    ]


@server.tool(
    description="Append this server's pid to the file `path`; the first time, then wait forever."
)
async def tally(path: str) -> str:
    with open(path, "a") as file:
        file.write(f"{os.getpid()}\n")
    lines = Path(path).read_text().splitlines()
    if len(lines) == 1:
        await anyio.sleep(120)
    return f"tallied {len(lines)}"


@server.tool(description="The server's process id.")
def pid() -> int:
    return os.getpid()


@server.tool(description="Add a tool named `name` and tell the client the list changed.")
async def grow(name: str, ctx: Context) -> str:
    server.add_tool(lambda: name, name=name, description="Added at run time.")
    if ctx.protocol_version == "2026-07-28":
        await ctx.notify_tools_changed()
    else:
        await ctx.session.send_tool_list_changed()
    return f"added {name}"


def ask_name() -> Elicit[Answer]:
    return Elicit("What is your name?", Answer)


@server.tool(description="Ask the person for their name.")
async def greet(answer: Annotated[ElicitationResult[Answer], Resolve(ask_name)]) -> str:
    if answer.action == "accept":
        return f"hello {answer.data.name}"
    return f"no name ({answer.action})"


@server.tool(description="Log to stderr, then answer.")
def shout(text: str) -> str:
    print(f"shouting {text}", file=sys.stderr, flush=True)
    return text.upper()


if __name__ == "__main__":
    if "--handshake-only" in sys.argv:
        sys.argv.remove("--handshake-only")
        import mcp.server.runner
        import mcp.server.streamable_http_manager as http_manager

        # No request opens the stateless era: each connection (stdio) or request (HTTP) is
        # served as the servers of the handshake era serve it.
        mcp.server.runner._has_modern_envelope = lambda params: False
        http_manager.HANDSHAKE_PROTOCOL_VERSIONS = (
            *http_manager.HANDSHAKE_PROTOCOL_VERSIONS,
            "2026-07-28",
        )
    linger = "--linger" in sys.argv  # like a server busy elsewhere: its input's end is not its own
    if linger:
        sys.argv.remove("--linger")
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        note_cancellations_as_read()
        server.run()
    if linger:
        import time

        time.sleep(600)
