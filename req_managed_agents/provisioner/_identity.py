"""Content addressing: digests of canonical JSON, and provider names built from them.

The identity contract: a digest is the SHA-256 of the content encoded as canonical JSON -
keys sorted, no insignificant whitespace, UTF-8 (non-ASCII kept as is), lists in order.
Numbers are normalised so that equal values hash alike: an integral float is encoded as the
integer (``1.0`` as ``1``), other floats by Python's shortest round-trip representation, and
NaN or infinity is rejected (``ValueError``), as is any value JSON cannot express. ``digest8``
is the first 8 lowercase hex characters; provider-side names are ``<base>_<digest8>``
(``<base>-<digest8>`` for Gemini, whose ids take no ``_``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AGENTCORE_NAMES",
    "CLAUDE_NAMES",
    "GEMINI_NAMES",
    "OPENAI_NAMES",
    "NamePolicy",
    "canonical_json",
    "compose_name",
    "digest",
    "digest8",
    "split_name",
]


def _normalise(value: Any, path: str) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError(f"{path}: NaN and infinity have no canonical JSON form")
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        normalised = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{path}: object keys must be strings, got {key!r}")
            normalised[key] = _normalise(item, f"{path}.{key}")
        return normalised
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray, memoryview)):
        return [_normalise(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise ValueError(f"{path}: {type(value).__name__} is not JSON")


def canonical_json(content: Any) -> bytes:
    """``content`` in the canonical encoding that digests are computed over."""
    normalised = _normalise(content, "$")
    return json.dumps(
        normalised, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def digest(content: Any) -> str:
    """SHA-256 of the canonical JSON of ``content``, as 64 lowercase hex characters."""
    return hashlib.sha256(canonical_json(content)).hexdigest()


def digest8(content: Any) -> str:
    """The first 8 hex characters of :func:`digest`: the suffix of provider names."""
    return digest(content)[:8]


@dataclass(frozen=True)
class NamePolicy:
    """What a provider accepts as a resource name."""

    max_length: int
    invalid: re.Pattern[str] | None = None
    must_start_with_letter: bool = False
    # What stands for an invalid character and joins the parts; whether case is folded.
    separator: str = "_"
    lowercase: bool = False


# Claude agents and environments take any name of up to 256 characters.
CLAUDE_NAMES = NamePolicy(max_length=256)
# OpenAI agent names: kept to 256 characters here (the SDK states no limit).
OPENAI_NAMES = NamePolicy(max_length=256)
# AgentCore harness names: [a-zA-Z][a-zA-Z0-9_]{0,39}.
AGENTCORE_NAMES = NamePolicy(
    max_length=40, invalid=re.compile(r"[^A-Za-z0-9_]"), must_start_with_letter=True
)
# Gemini agent ids (caller-chosen, the content address itself): 1 to 63 lowercase letters,
# digits and dashes, starting with a letter (a Google resource id).
GEMINI_NAMES = NamePolicy(
    max_length=63,
    invalid=re.compile(r"[^a-z0-9-]"),
    must_start_with_letter=True,
    separator="-",
    lowercase=True,
)
# Room for "_<6 hex>" when a long base is shortened, plus the separator before the digest.
_BASE_HASH_LENGTH = 6


def compose_name(base: str, digest_8: str, policy: NamePolicy) -> str:
    """``<base>_<digest8>`` made acceptable to ``policy``.

    Invalid characters become the policy's separator (``_``, or ``-`` for Gemini, which
    also joins the parts; its names are lowercased first); a base not starting with a
    letter gets an ``a`` prefix when the policy demands one. A base too long for the limit
    keeps its beginning plus the separator and 6 hex characters of a hash of the whole base,
    so two long bases sharing a prefix still get different names; the digest itself is
    never shortened.
    """
    if not base:
        raise ValueError("a name base must not be empty")
    joint = policy.separator
    fitted = base.lower() if policy.lowercase else base
    fitted = policy.invalid.sub(joint, fitted) if policy.invalid is not None else fitted
    if policy.must_start_with_letter and not fitted[0].isalpha():
        fitted = "a" + fitted
    budget = policy.max_length - len(digest_8) - 1
    if budget < _BASE_HASH_LENGTH + 2:
        raise ValueError(f"a name limit of {policy.max_length} leaves no room for a base")
    if len(fitted) > budget:
        base_hash = hashlib.sha256(base.encode("utf-8")).hexdigest()[:_BASE_HASH_LENGTH]
        fitted = f"{fitted[: budget - _BASE_HASH_LENGTH - 1]}{joint}{base_hash}"
    return f"{fitted}{joint}{digest_8}"


_VERSIONED = re.compile(r"(?P<base>.+)_(?P<digest>[0-9a-f]{8})", re.DOTALL)


def split_name(name: str) -> tuple[str, str] | None:
    """``(base, digest8)`` of a content-addressed name, or None if it is not one."""
    match = _VERSIONED.fullmatch(name)
    return (match["base"], match["digest"]) if match else None
