"""Environments: the remote sandboxes agents work in, with their sources."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from req_managed_agents.providers._api import body_of
from req_managed_agents.providers.gemini.api._core import ClientCore, Json, segment

__all__ = ["ENVIRONMENT_FIELDS", "EnvironmentsAPI"]

# CreateEnvironmentRequest's fields (google-genai 3.6.1): the service chooses the id.
ENVIRONMENT_FIELDS = frozenset(
    {"sources", "mode", "network", "custom_config", "system_instruction", "from_environment"}
)
_MODES = ("on_demand", "self_hosted")


def _environment_body(body: Mapping[str, Any] | None, fields: Mapping[str, Any]) -> Json:
    merged = body_of(body, fields)
    unknown = sorted(set(merged) - ENVIRONMENT_FIELDS)
    if unknown:
        raise ValueError(f"an environment declares no {', '.join(unknown)}")
    if merged.get("mode") is not None and merged["mode"] not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {merged['mode']!r}")
    sources = merged.get("sources")
    if sources is not None and not isinstance(sources, (list, tuple)):
        raise ValueError(f"sources must be a list, got {type(sources).__name__}")
    return {key: value for key, value in merged.items() if value is not None}


class EnvironmentsAPI(ClientCore):
    """Environments (``/{version}/environments``)."""

    def create_environment(self, body: Mapping[str, Any] | None = None, /, **fields: Any) -> Json:
        """``POST /environments``. Not retried once it may have landed: a repeat would
        leave a second one."""
        body = _environment_body(body, fields)
        return self._json("POST", "/environments", idempotent=False, body=body)

    def get_environment(self, environment_id: str) -> Json:
        """One environment: its status (``active``, ``expired``), sources, size."""
        return self._get(f"/environments/{segment(environment_id)}")

    def iter_environments(self, *, mode: str | None = None) -> Iterator[Json]:
        """Every environment (of one ``mode``, when given), a page at a time."""
        params = {"mode": mode} if mode is not None else None
        return self._pages("/environments", params, member="environments")

    def list_environments(self, *, mode: str | None = None) -> list[Json]:
        """Every environment (all pages)."""
        return list(self.iter_environments(mode=mode))

    def delete_environment(self, environment_id: str) -> Json:
        """Delete an environment (answered ``{}``)."""
        return self._delete(f"/environments/{segment(environment_id)}", required=())
