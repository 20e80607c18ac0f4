"""Serve the built-in Claude emulator for this site: no credentials, no network.

    python emulator.py python manage.py runserver   # the emulator, and the site aimed at it
    python emulator.py                              # prints the environment to export, waits

The weather agent says a word, calls the site's get_weather tool (which runs in Django),
then reports what the tool said. The cleanup agent (for the approvals page, see README)
asks permission to run ``rm -rf build`` with its own bash tool, then says what came of it.
Ctrl-C stops it (and the command it started).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

from req_managed_agents.testing import ClaudeEmulator, ToolCall, Turn, call

SCRIPT = [
    Turn(text="Let me check the weather.", tool_calls=[call("get_weather", city="Paris")]),
    Turn(text=lambda results: f"Here is the weather: {results[0]}.", delay=0.5),
]
# The agent's own bash tool asks for permission first: a person answers on /approvals/.
REMOVE_BUILD = ToolCall("bash", {"command": "rm -rf build"}, result="", permission="ask")
CLEANUP = [
    Turn(text="I will delete the build folder.", server_tool_calls=[REMOVE_BUILD]),
    Turn(text=lambda answers: cleaned(answers[0]), delay=0.5),
]


def cleaned(answer: str) -> str:
    """The cleanup agent's last words: the emulator passes "allowed" or "denied: <why>"."""
    if answer == "allowed":
        return "Done: the build folder is gone."
    return f"I left the build folder alone ({answer})."


def main(command: list[str]) -> int:
    with ClaudeEmulator() as emulator:
        env = {
            "ANTHROPIC_API_KEY": emulator.api_key,
            "ANTHROPIC_BASE_URL": emulator.base_url,
            "CLAUDE_AGENT_ID": emulator.add_agent(SCRIPT, name="weather"),
            "CLAUDE_APPROVALS_AGENT_ID": emulator.add_agent(CLEANUP, name="cleanup"),
            "CLAUDE_ENVIRONMENT_ID": emulator.add_environment(),
        }
        print(f"Claude emulator at {emulator.base_url}", file=sys.stderr)
        try:
            if command:
                return subprocess.call(command, env={**os.environ, **env})
            print("".join(f"export {name}={value}\n" for name, value in env.items()), end="")
            print("Serving until Ctrl-C.", file=sys.stderr)
            threading.Event().wait()
        except KeyboardInterrupt:
            return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
