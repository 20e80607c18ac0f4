"""The README's first command, run as written (but into a fresh folder): it installs the
project, runs the demo, and leaves an install whose types reach a type checker - mypy on a
user's script outside the repository sees ``SessionResult`` and flags a misspelt option."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
USER_SCRIPT = """\
from req_managed_agents import ClaudeManagedAgents, Tools, run_to_completion

provider = ClaudeManagedAgents(api_key="sk-test")
result = run_to_completion(provider, "hi", handler=Tools(), agent_id="a", environment_id="e")
reveal_type(result)
run_to_completion(provider, "hi", handler=Tools(), max_turn=3)
"""


def readme_install_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```sh\n(.*?)\n```", readme, flags=re.DOTALL)[0].strip()


def test_the_readme_install_runs_the_demo_and_gives_types_to_a_type_checker(
    tmp_path: Path,
) -> None:
    command = readme_install_command()
    assert command.startswith("python3 -m venv .venv && .venv/bin/pip install -e . ")
    venv = tmp_path / "venv"
    # The same command, with the checkout given by path and the venv outside it.
    here = command.replace(".venv", str(venv)).replace(" -e . ", f" -e {ROOT} ")
    here = here.replace("python3 -m venv", f"{sys.executable} -m venv", 1)
    done = subprocess.run(
        here, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "Running against the built-in emulator" in done.stdout
    script = tmp_path / "user.py"
    script.write_text(USER_SCRIPT)
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-incremental"]
    checked = subprocess.run(
        [*mypy, "--python-executable", str(venv / "bin" / "python"), str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert 'Revealed type is "req_managed_agents.model._vocabulary.SessionResult"' in checked.stdout
    assert 'Unexpected keyword argument "max_turn"' in checked.stdout
    assert 'did you mean "max_turns"' in checked.stdout
