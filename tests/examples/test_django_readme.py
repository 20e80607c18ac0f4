"""The README's Django command, run as written (in a copy of the checkout, on a free port),
and ``manage.py check`` telling a missing API key before any request fails."""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.checkout import ROOT, copy_checkout

pytest.importorskip("django")

EXAMPLE = ROOT / "examples" / "django"


def readme_django_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (command,) = [
        block.strip()
        for block in re.findall(r"```sh\n(.*?)\n```", readme, flags=re.DOTALL)
        if "manage.py runserver" in block
    ]
    return command


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def get(port: int, path: str) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def test_the_readme_django_command_serves_the_page_and_a_run(tmp_path: Path) -> None:
    command = readme_django_command()
    assert command.startswith("python3 -m venv .venv && .venv/bin/pip install -e . django ")
    port = free_port()
    # The command as written (with this Python), in a copy of the checkout.
    checkout = copy_checkout(tmp_path / "checkout")
    here = command.replace("python3 -m venv", f"{sys.executable} -m venv", 1)
    assert here.endswith(" manage.py runserver")
    here += f" 127.0.0.1:{port} --noreload"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    process = subprocess.Popen(
        here,
        shell=True,
        cwd=checkout,
        env={**env, "NO_PROXY": "127.0.0.1,localhost"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # the shell, the emulator and the site: stopped together
    )
    try:
        deadline = time.monotonic() + 240
        while True:
            assert process.poll() is None, process.communicate()[0].decode()
            try:
                status, page = get(port, "/")
                break
            except OSError:
                assert time.monotonic() < deadline, "the site did not come up"
                time.sleep(0.2)
        assert status == 200
        assert "new EventSource" in page
        status, body = get(port, "/stream?q=Weather+in+Paris")
        assert status == 200
        assert "event: done" in body
        assert "Here is the weather: 18 degrees and sunny in Paris." in body.replace("\\", "")
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        assert process.stdout is not None
        process.stdout.close()


def test_manage_py_check_reports_a_missing_api_key() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "chat.E001" in done.stderr
    assert "ANTHROPIC_API_KEY is not set" in done.stderr
    with_key = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=EXAMPLE,
        env={**env, "ANTHROPIC_API_KEY": "sk-test", "CLAUDE_AGENT_ID": "a"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert with_key.returncode == 0, with_key.stderr
    assert "chat.W002" in with_key.stderr  # the environment id is still missing: a warning
