"""A user's program for the Ctrl-C test: ``run_to_completion`` on the Claude emulator with
the python test server's ``wait`` tool, which runs until it is cancelled. Run as
``python interrupted_run.py MARKER PIDFILE``: the server's pid goes to PIDFILE before the
run starts; the test sends SIGINT once MARKER says the call started. Nothing here catches
the KeyboardInterrupt: the program ends as any script a user interrupts."""

from __future__ import annotations

import sys
from pathlib import Path

from req_managed_agents import McpServer, Tools, run_to_completion
from req_managed_agents.testing import ClaudeEmulator, Turn, call

SERVER = str(Path(__file__).with_name("python_server.py"))


def main(marker: str, pid_file: str) -> None:
    script = [Turn(tool_calls=[call("wait", marker=marker)]), Turn(text="-")]
    with McpServer(sys.executable, [SERVER, "--handshake-only"], name="py") as server:
        Path(pid_file).write_text(str(server.call_tool("pid").structured_content["result"]))
        tools = Tools()
        tools.include(server, allow=["wait"])
        with ClaudeEmulator(script) as emulator, emulator.provider(timeout=10) as provider:
            run_to_completion(
                provider,
                "Wait.",
                handler=tools,
                agent_id=emulator.add_agent(),
                environment_id=emulator.add_environment(),
                timeout=300,
            )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
