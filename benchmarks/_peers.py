"""The peer libraries the benchmarks compare against, kept out of the project's virtualenv.

``anthropic``, ``boto3``, ``botocore``, ``openai`` and ``google-genai`` are test extras, so
``scripts/test`` has already installed them. ``httpx-sse`` and ``sseclient-py`` are not: they
are installed with ``pip install --target`` into ``benchmarks/.peers`` (git-ignored) and that
folder goes at the *end* of ``sys.path``, so that nothing in it can shadow what the project's
environment holds.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys
from pathlib import Path

PEERS_DIR = Path(__file__).parent / ".peers"

# module -> distribution, for what must be importable and what the report names. httpx-sse
# does not declare its dependency on httpx.
_INSTALLABLE = {"httpx_sse": "httpx-sse", "httpx": "httpx", "sseclient": "sseclient-py"}
_FROM_TEST_EXTRAS = {
    "anthropic": "anthropic",
    "botocore": "botocore",
    "boto3": "boto3",
    "openai": "openai",
    "mcp": "mcp",
    "google.genai": "google-genai",
}


def ensure_peers() -> None:
    """Make every peer importable, installing the missing ones into ``PEERS_DIR``; exit
    when one stays missing, since a table without it would compare against less."""
    if str(PEERS_DIR) not in sys.path:
        sys.path.append(str(PEERS_DIR))
    missing = [dist for module, dist in _INSTALLABLE.items() if not _importable(module)]
    if missing:
        print(f"installing {', '.join(missing)} into {PEERS_DIR}", file=sys.stderr)
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--target", str(PEERS_DIR), *missing],
            check=False,
        )
        importlib.invalidate_caches()
    unusable = [dist for module, dist in _INSTALLABLE.items() if not _importable(module)]
    if unusable:
        raise SystemExit(f"could not install {', '.join(unusable)} into {PEERS_DIR}")
    absent = [dist for module, dist in _FROM_TEST_EXTRAS.items() if not _importable(module)]
    if absent:
        raise SystemExit(
            f"missing {', '.join(absent)}: run scripts/test once (it installs the test extras)"
        )


def versions() -> dict[str, str]:
    """The version of every peer that is importable, by distribution name."""
    found = {}
    for distribution in [*_INSTALLABLE.values(), *_FROM_TEST_EXTRAS.values()]:
        try:
            found[distribution] = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def _importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None
