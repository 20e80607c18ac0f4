"""Vaults and the credentials they hold (secrets never come back)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from req_managed_agents.providers.claude.api._core import (
    ClientCore,
    Json,
    body_of,
    query_params,
    segment,
)

__all__ = ["VaultsAPI"]


def _credential_path(vault_id: str, credential_id: str) -> str:
    return f"/v1/vaults/{segment(vault_id)}/credentials/{segment(credential_id)}"


class VaultsAPI(ClientCore):
    """Vaults and the credentials they hold (secrets never come back)."""

    def create_vault(self, body: Mapping[str, Any] | None = None, /, **fields: Any) -> Json:
        """``POST /v1/vaults`` with ``display_name`` and optional ``metadata``."""
        return self._create("/v1/vaults", body_of(body, fields), "display_name", "a vault")

    def get_vault(self, vault_id: str) -> Json:
        """A vault (its credentials are listed separately)."""
        return self._get(f"/v1/vaults/{segment(vault_id)}")

    def list_vaults(self, **params: Any) -> list[Json]:
        """Every vault (all pages); ``include_archived=True`` to see archived ones."""
        return self._list("/v1/vaults", query_params(params))

    def update_vault(
        self, vault_id: str, body: Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Json:
        """Change a vault's ``display_name`` or ``metadata``."""
        return self._update(f"/v1/vaults/{segment(vault_id)}", body_of(body, fields))

    def archive_vault(self, vault_id: str) -> Json:
        """Archive a vault."""
        return self._archive(f"/v1/vaults/{segment(vault_id)}")

    def delete_vault(self, vault_id: str) -> Json:
        """Delete a vault."""
        return self._delete(f"/v1/vaults/{segment(vault_id)}")

    def create_vault_credential(
        self, vault_id: str, body: Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Json:
        """Store a credential in a vault; ``auth`` (MCP OAuth, static bearer or environment
        variable, by its ``type``) is required."""
        body = body_of(body, fields)
        auth = body.get("auth")
        if not isinstance(auth, Mapping) or not auth.get("type"):
            raise ValueError("a vault credential needs an auth mapping with a type")
        path = f"/v1/vaults/{segment(vault_id)}/credentials"
        return self._json("POST", path, idempotent=False, body=body)

    def get_vault_credential(self, vault_id: str, credential_id: str) -> Json:
        """One credential of a vault; its auth comes back without the secret."""
        return self._get(_credential_path(vault_id, credential_id))

    def list_vault_credentials(self, vault_id: str, **params: Any) -> list[Json]:
        """Every credential of a vault (all pages); ``include_archived=True`` for archived."""
        return self._list(f"/v1/vaults/{segment(vault_id)}/credentials", query_params(params))

    def update_vault_credential(
        self, vault_id: str, credential_id: str, body: Mapping[str, Any]
    ) -> Json:
        """Change a credential's ``auth`` (rotate a secret), ``display_name`` or ``metadata``."""
        return self._update(_credential_path(vault_id, credential_id), dict(body))

    def archive_vault_credential(self, vault_id: str, credential_id: str) -> Json:
        """Archive a credential of a vault."""
        return self._archive(_credential_path(vault_id, credential_id))

    def delete_vault_credential(self, vault_id: str, credential_id: str) -> Json:
        """Delete a credential of a vault."""
        return self._delete(_credential_path(vault_id, credential_id))

    def validate_vault_credential(self, vault_id: str, credential_id: str) -> Json:
        """Probe an MCP OAuth credential against its MCP server now: ``status`` is
        ``valid``, ``invalid`` (the end user should authorize again) or ``unknown``, with the
        failing ``mcp_probe`` step and any ``refresh`` attempted. Other kinds of credential
        are refused by the API."""
        path = f"{_credential_path(vault_id, credential_id)}/mcp_oauth_validate"
        # A probe creates nothing: a repeat probes again, with whatever token is stored then.
        return self._json("POST", path, idempotent=True, body={}, required=())
