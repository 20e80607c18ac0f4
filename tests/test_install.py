"""The README's two commands, in order, into one virtualenv: the first installs the project and
runs the demo, the second's install step (``scripts/test`` installs the test extras before it
tests) installs again the same way. Afterwards the install still gives its types to type
checkers and IDEs: ``mypy --strict`` and ``pyright --strict`` on a user's script outside the
repository see ``SessionResult`` and flag a misspelt option, and nothing else.

Both run in a copy of the checkout (see :mod:`tests.support.checkout`).
"""

from __future__ import annotations

import faulthandler
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.checkout import ROOT, copy_checkout

USER_SCRIPT = """\
# pyright: strict
from req_managed_agents import ClaudeManagedAgents, Tools, run_to_completion

provider = ClaudeManagedAgents(api_key="sk-test")
result = run_to_completion(provider, "hi", handler=Tools(), agent_id="a", environment_id="e")
reveal_type(result)
run_to_completion(provider, "hi", handler=Tools(), max_turn=3)
"""
REVEAL_LINE = 6
MISSPELT_LINE = 7
SESSION_RESULT = "req_managed_agents.model._vocabulary.SessionResult"
QUIET = ("--quiet", "--disable-pip-version-check")  # what scripts/test adds, besides extras


def readme_commands() -> tuple[str, str]:
    """The README's first two shell blocks: the install and the test command."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install, test = re.findall(r"```sh\n(.*?)\n```", readme, flags=re.DOTALL)[:2]
    return install.strip(), test.strip()


def install_step(script: Path) -> str:
    """The one command of ``scripts/test`` that installs into its virtualenv (continued lines
    joined): nothing else there installs into it another way."""
    lines = re.sub(r"\\\n\s*", " ", script.read_text()).splitlines()
    (line,) = [line for line in lines if re.search(r'\bpip"? install ', line)]
    return line.strip()


def run(
    command: str | list[str], cwd: Path, check: bool = True
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        command,
        shell=isinstance(command, str),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=420,
    )
    assert not check or done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done


def test_the_readme_install_and_test_commands_keep_the_types_for_mypy_and_pyright(
    tmp_path: Path,
) -> None:
    # Minutes of installs, each bounded by its own timeout: nothing for pytest's
    # faulthandler_timeout (2 min) to report as a hang.
    faulthandler.cancel_dump_traceback_later()
    install, test = readme_commands()
    assert install.startswith("python3 -m venv .venv && .venv/bin/pip install -e . ")
    assert test == "scripts/test"
    checkout = copy_checkout(tmp_path / "checkout")
    # One install command: scripts/test's is the README's, with the test extras.
    step = install_step(checkout / "scripts" / "test")
    pip, *arguments = shlex.split(step)
    assert pip == "$venv/bin/pip"
    arguments = [re.sub(r"^\.\[[\w,-]+\]$", ".", a) for a in arguments if a not in QUIET]
    assert arguments == shlex.split(install.split(" && ")[1])[1:], step

    # The README's first command as written, in the copy (with this Python), then the test
    # command's install step into the same .venv, as scripts/test runs it - without the test
    # extras' dependencies: what a type checker sees of the package is the install's mode,
    # and minutes of downloads on a busy machine would only make the test slow.
    done = run(install.replace("python3 -m venv", f"{sys.executable} -m venv", 1), checkout)
    assert "Running against the built-in emulator" in done.stdout
    run(["bash", "-c", f"set -euo pipefail\nvenv=.venv\n{step} --no-deps"], checkout)

    venv = checkout / ".venv" / "bin"
    user = tmp_path / "user"
    user.mkdir()
    (user / "user.py").write_text(USER_SCRIPT)
    # This suite's mypy, looking at the user's .venv as an IDE does.
    checker = [sys.executable, "-m", "mypy", "--python-executable", str(venv / "python")]
    mypy = run([*checker, "--strict", "--no-incremental", "user.py"], user, check=False)
    reports = [line for line in mypy.stdout.splitlines() if line.startswith("user.py:")]
    assert reports[0] == f'user.py:{REVEAL_LINE}: note: Revealed type is "{SESSION_RESULT}"'
    # Nothing on any other line: no missing module, no Any.
    assert all(r.startswith(f"user.py:{MISSPELT_LINE}: ") for r in reports[1:]), mypy.stdout
    assert any(
        'error: Unexpected keyword argument "max_turn"' in r and 'did you mean "max_turns"' in r
        for r in reports
    ), mypy.stdout

    installed = run([str(venv / "pip"), "install", "--quiet", "pyright[nodejs]"], user, False)
    if installed.returncode != 0:
        pytest.skip(f"mypy passed; pyright could not be installed: {installed.stderr[-500:]}")
    pyright = run(
        [str(venv / "pyright"), "--outputjson", "--pythonpath", str(venv / "python"), "user.py"],
        user,
        check=False,
    )
    found = json.loads(pyright.stdout)["generalDiagnostics"]
    diagnostics = [(d["range"]["start"]["line"] + 1, d["severity"], d["message"]) for d in found]
    assert diagnostics[0] == (REVEAL_LINE, "information", 'Type of "result" is "SessionResult"')
    # Strict mode, and nothing on any other line: nothing unresolved, nothing unknown.
    assert [d[:2] for d in diagnostics[1:]] == [(MISSPELT_LINE, "error")], found
    assert 'No overloads for "run_to_completion"' in diagnostics[1][2], found
