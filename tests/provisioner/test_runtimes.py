from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from req_managed_agents.provisioner import (
    Runtime,
    bootstrap_script,
    required_hosts,
    system_prompt_block,
)

PYTHON = Runtime("python", "3.12")
NODE = Runtime("node", "20.11.1")
ELIXIR = Runtime("elixir", "1.17.2-otp-27")
ERLANG = Runtime("erlang", "27.0")
MISE_HOSTS = [
    "github.com",
    "mise-versions.jdx.dev",
    "mise.jdx.dev",
    "objects.githubusercontent.com",
]
MARKER = "# mise activate-rma"

RUNTIME_SETS = [
    [PYTHON],
    [PYTHON, NODE],
    [ERLANG, ELIXIR, NODE, Runtime("go", "1.22.5"), Runtime("rust", "1.80.0+beta-2")],
]

# A stand-in for the mise installer: `curl ... | sh` gets a script that drops a fake `mise`
# (logging its arguments) into ~/.local/bin, where the real installer puts it.
FAKE_CURL = """#!/bin/sh
echo "$*" >> "$HOME/curl.log"
cat <<'INSTALL'
mkdir -p "$HOME/.local/bin"
printf '#!/bin/sh\\necho "$*" >> "$HOME/mise.log"\\n' > "$HOME/.local/bin/mise"
chmod +x "$HOME/.local/bin/mise"
INSTALL
"""
FAKE_MISE = """#!/bin/sh
echo "$*" >> "$HOME/mise.log"
"""


def sh_parses(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", "-n"], input=script, capture_output=True, text=True, check=False, timeout=10
    )


class Sandbox:
    """A fake HOME and a PATH with a fake curl (and optionally a fake mise) and no network."""

    def __init__(self, root: Path, *, mise_installed: bool) -> None:
        self.home = root / "home"
        self.home.mkdir()
        self.bin = root / "bin"
        self.bin.mkdir()
        self._write(self.bin / "curl", FAKE_CURL)
        if mise_installed:
            self._write(self.bin / "mise", FAKE_MISE)
        self.script = root / "bootstrap.sh"

    @staticmethod
    def _write(path: Path, text: str) -> None:
        path.write_text(text)
        path.chmod(0o755)

    def run(self, script: str) -> None:
        self.script.write_text(script)
        env = {"HOME": str(self.home), "PATH": f"{self.bin}:/usr/bin:/bin"}
        result = subprocess.run(
            ["/bin/sh", str(self.script)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=20,
        )
        assert result.returncode == 0, result.stderr

    def log(self, name: str) -> list[str]:
        path = self.home / name
        return path.read_text().splitlines() if path.exists() else []

    @property
    def bashrc(self) -> str:
        return (self.home / ".bashrc").read_text()


SandboxFactory = Callable[..., Sandbox]


@pytest.fixture
def sandbox_factory(tmp_path: Path) -> SandboxFactory:
    if any(os.path.exists(os.path.join(d, "mise")) for d in ("/usr/bin", "/bin")):
        pytest.skip("a real mise on the sandbox PATH would shadow the fake")
    if shutil.which("grep", path="/usr/bin:/bin") is None:
        pytest.skip("needs grep")

    def make(*, mise_installed: bool) -> Sandbox:
        root = tmp_path / ("with_mise" if mise_installed else "without_mise")
        root.mkdir()
        return Sandbox(root, mise_installed=mise_installed)

    return make


# --- the script's text ----------------------------------------------------------------------


@pytest.mark.parametrize("runtimes", RUNTIME_SETS, ids=lambda runtimes: f"{len(runtimes)}-runtimes")
def test_bootstrap_script_is_posix_sh(runtimes: list[Runtime]) -> None:
    script = bootstrap_script(runtimes)
    assert script.startswith("#!/bin/sh\n")
    parsed = sh_parses(script)
    assert parsed.returncode == 0, parsed.stderr
    assert "set -eu" in script.splitlines()


def test_sh_n_check_catches_broken_scripts() -> None:
    # The parse check above only means something if sh -n rejects a broken script.
    assert sh_parses("if true; then\n echo x\n").returncode != 0


@pytest.mark.parametrize("runtimes", RUNTIME_SETS, ids=lambda runtimes: f"{len(runtimes)}-runtimes")
def test_one_mise_use_per_runtime_in_order(runtimes: list[Runtime]) -> None:
    lines = bootstrap_script(runtimes).splitlines()
    uses = [line for line in lines if line.startswith("mise use")]
    assert uses == [f"mise use --global '{r.lang}@{r.version}'" for r in runtimes]
    # mise install runs once, after every `mise use`.
    assert lines.count("mise install") == 1
    assert lines.index("mise install") > lines.index(uses[-1])


def test_mise_installer_is_guarded_and_the_profile_marker_checked() -> None:
    lines = bootstrap_script([PYTHON]).splitlines()
    curl = [i for i, line in enumerate(lines) if "curl" in line]
    assert len(curl) == 1
    assert lines[curl[0] - 1] == "if ! command -v mise >/dev/null 2>&1; then"
    assert "https://mise.jdx.dev/install.sh" in lines[curl[0]]
    assert lines.count(MARKER) == 1
    assert any(line.startswith(f"if ! grep -qF '{MARKER}'") for line in lines)


def test_bootstrap_script_is_deterministic() -> None:
    assert bootstrap_script([PYTHON, NODE]) == bootstrap_script((PYTHON, NODE))
    assert bootstrap_script([PYTHON, NODE]) != bootstrap_script([NODE, PYTHON])
    assert bootstrap_script([PYTHON]) != bootstrap_script([Runtime("python", "3.13")])


def test_nothing_declared_means_nothing_to_do() -> None:
    assert bootstrap_script([]) == ""
    assert bootstrap_script(()) == ""
    assert system_prompt_block([]) == ""
    assert required_hosts([]) == []


# --- running the script against fakes -------------------------------------------------------


def test_script_installs_mise_when_missing_and_runtimes_in_order(
    sandbox_factory: SandboxFactory,
) -> None:
    box = sandbox_factory(mise_installed=False)
    box.run(bootstrap_script([PYTHON, NODE]))
    assert box.log("curl.log") == ["-fsSL https://mise.jdx.dev/install.sh"]
    assert box.log("mise.log") == [
        "use --global python@3.12",
        "use --global node@20.11.1",
        "install",
    ]
    assert box.bashrc.splitlines()[0] == MARKER


def test_script_skips_the_installer_when_mise_exists(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory(mise_installed=True)
    script = bootstrap_script([PYTHON])
    box.run(script)
    box.run(script)
    assert box.log("curl.log") == []
    assert box.log("mise.log") == ["use --global python@3.12", "install"] * 2


def test_rerunning_extends_the_profile_once_and_keeps_it(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory(mise_installed=True)
    (box.home / ".bashrc").write_text("alias ll='ls -l'\n")
    script = bootstrap_script([PYTHON, NODE])
    for _ in range(3):
        box.run(script)
    lines = box.bashrc.splitlines()
    assert lines[0] == "alias ll='ls -l'"
    assert lines.count(MARKER) == 1
    assert sum("mise/shims" in line for line in lines) == 1


def test_second_run_does_not_reinstall_mise(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory(mise_installed=False)
    script = bootstrap_script([PYTHON])
    box.run(script)
    box.run(script)
    assert len(box.log("curl.log")) == 1


# --- hosts and prompt -----------------------------------------------------------------------


def test_required_hosts_for_plain_runtimes_are_the_mise_hosts() -> None:
    assert required_hosts([PYTHON]) == MISE_HOSTS
    assert required_hosts([Runtime("rust", "1.80.0")]) == MISE_HOSTS


def test_required_hosts_add_language_extras_sorted_and_deduplicated() -> None:
    hosts = required_hosts([ELIXIR, ERLANG, NODE, Runtime("elixir", "1.16.0")])
    assert hosts == sorted(set(hosts))
    assert {"repo.hex.pm", "builds.hex.pm", "nodejs.org"} <= set(hosts)
    assert set(MISE_HOSTS) <= set(hosts)
    assert len(hosts) == len(MISE_HOSTS) + 3
    assert {"repo.hex.pm", "builds.hex.pm"} <= set(required_hosts([ELIXIR]))
    assert {"go.dev", "dl.google.com"} <= set(required_hosts([Runtime("go", "1.22")]))


def test_system_prompt_block_carries_the_script_in_a_fence() -> None:
    runtimes = [PYTHON, NODE]
    block = system_prompt_block(runtimes)
    assert block.startswith("## Runtime bootstrap\n")
    assert "python 3.12, node 20.11.1" in block
    fence = "```sh\n" + bootstrap_script(runtimes) + "```"
    assert fence in block
    assert block.count("```") == 2
    assert block.endswith("```\n")
