"""A copy of this checkout, for the tests that run the README's install commands as written.

A strict editable install (``editable_mode=strict``) empties and rebuilds the checkout's
``build/__editable__...`` folder, the one the suite's own ``.venv`` imports from: run in the
checkout itself, it would pull modules from under the tests running beside it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["ROOT", "copy_checkout"]

ROOT = Path(__file__).resolve().parents[2]
# What a fresh clone does not have (.gitignore's entries), so the copy has none of it either.
_NOT_COPIED = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    ".hypothesis",
    ".peers",
)


def copy_checkout(destination: Path) -> Path:
    """Copy the checkout's files (as a fresh clone would have them) to ``destination``."""
    shutil.copytree(ROOT, destination, ignore=_NOT_COPIED)
    return destination
