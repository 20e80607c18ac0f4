"""Vaults and their credentials for the Claude emulator: stored secrets sessions can use.

A vault (``/v1/vaults``) is created with a ``display_name``, read, updated (metadata as a
patch), listed (archived ones on request), archived and deleted. Its credentials
(``/v1/vaults/{id}/credentials``) hold an MCP OAuth token, a static bearer token or an
environment variable; they go through the same verbs, and an update cannot change a
credential's ``auth.type``. As with the service, secrets go in and never come back out: the
answers carry only the non-secret parts of ``auth``. An archived vault takes no new
credentials; a session names vaults by id in ``vault_ids``.

``.../mcp_oauth_validate`` stands in for the service's live probe of an MCP OAuth
credential against its server: the emulator reaches no server, so it answers ``valid``
with no failing probe step and no refresh attempted (``has_refresh_token`` says whether a
refresh is configured). Any other kind of credential is refused with a 400
``invalid_request_error``: there is no OAuth token to probe.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._resource import Resource
from req_managed_agents.testing.claude._wire import (
    ID,
    _invalid,
    _json_object,
    _merged_metadata,
    _not_found,
    _reject_unknown,
)
from req_managed_agents.testing.server import new_id, utc_timestamp

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing.claude._state import ClaudeState
    from req_managed_agents.testing.server import Exchange, Route

_MAX_DISPLAY_NAME = 255
# Per auth type: the fields a create takes, the secret ones among them (never answered)
# and the ones it requires.
_AUTH_FIELDS = {
    "mcp_oauth": ({"type", "access_token", "mcp_server_url", "expires_at", "refresh"}),
    "static_bearer": ({"type", "token", "mcp_server_url"}),
    "environment_variable": (
        {"type", "secret_name", "secret_value", "networking", "injection_location"}
    ),
}
_SECRETS = frozenset({"access_token", "token", "secret_value", "refresh_token", "client_secret"})
_REQUIRED = {
    "mcp_oauth": ("access_token", "mcp_server_url"),
    "static_bearer": ("token", "mcp_server_url"),
    "environment_variable": ("secret_name", "secret_value", "networking"),
}


def _display_name(value: Any, *, required: bool) -> Any:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= _MAX_DISPLAY_NAME:
        raise _invalid(f"display_name: 1 to {_MAX_DISPLAY_NAME} characters")
    return value


def _without_secrets(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_secrets(v) for k, v in value.items() if k not in _SECRETS}
    return copy.deepcopy(value)


def _merged(stored: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """``patch`` over ``stored``, object by object; a null keeps what is stored."""
    merged = copy.deepcopy(dict(stored))
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)
        elif value is not None:
            merged[key] = copy.deepcopy(value)
    return merged


def _auth(spec: Any, stored: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The auth a credential keeps, checked: a create's, or an update merged into the
    stored one. Secrets are kept out of it (the emulator has no use for them)."""
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind not in _AUTH_FIELDS:
        raise _invalid("auth.type: 'mcp_oauth', 'static_bearer' or 'environment_variable'")
    if stored is not None and kind != stored["type"]:
        raise _invalid("auth.type: a credential's type cannot change")
    _reject_unknown(spec, frozenset(_AUTH_FIELDS[kind]))
    if stored is None:
        for key in _REQUIRED[kind]:
            if not spec.get(key):
                raise _invalid(f"auth.{key}: Field required")
    merged = _merged(stored or {}, _without_secrets(spec))
    if kind == "environment_variable":
        networking = merged.get("networking")
        if not isinstance(networking, dict) or networking.get("type") not in (
            "unrestricted",
            "limited",
        ):
            raise _invalid("auth.networking.type: 'unrestricted' or 'limited'")
        if networking["type"] == "limited":
            networking.setdefault("allowed_hosts", [])
        location = {"body": False, "header": False, **merged.get("injection_location", {})}
        merged["injection_location"] = location
    if kind == "mcp_oauth" and merged.get("refresh") is not None:
        refresh = merged["refresh"]
        for key in ("client_id", "token_endpoint", "token_endpoint_auth"):
            if not isinstance(refresh, dict) or not refresh.get(key):
                raise _invalid(f"auth.refresh.{key}: Field required")
        if refresh["token_endpoint_auth"].get("type") not in (
            "none",
            "client_secret_basic",
            "client_secret_post",
        ):
            raise _invalid("auth.refresh.token_endpoint_auth.type: not a known method")
    return merged


class Vaults(Resource):
    """The vault routes, and their credentials'."""

    def __init__(self, state: ClaudeState) -> None:
        super().__init__(state, state.vaults, "/v1/vaults")

    def routes(self) -> list[Route]:
        return [
            ("POST", "/v1/vaults", self._create_vault),
            ("POST", f"/v1/vaults/{ID}", self._update_vault),
            *super().routes(),
            *Credentials(self._state).routes(),
        ]

    def _create_vault(self, exchange: Exchange) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, frozenset({"display_name", "metadata"}))
        now = utc_timestamp()
        vault = {
            "id": new_id("vlt"),
            "type": "vault",
            "display_name": _display_name(body.get("display_name"), required=True),
            "metadata": _merged_metadata({}, body.get("metadata") or {}),
            "created_at": now,
            "updated_at": now,
            "archived_at": None,
        }
        with self._state.condition:
            self._state.vaults[vault["id"]] = vault
            return copy.deepcopy(vault)

    def _update_vault(self, exchange: Exchange, vault_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, frozenset({"display_name", "metadata"}))
        with self._state.condition:
            vault = self._state.vaults.find(vault_id)
            if vault["archived_at"]:
                raise _invalid("an archived vault cannot be updated")
            updated = copy.deepcopy(vault)
            if body.get("display_name") is not None:
                updated["display_name"] = _display_name(body["display_name"], required=True)
            if body.get("metadata") is not None:
                updated["metadata"] = _merged_metadata(vault["metadata"], body["metadata"])
            if updated != vault:
                updated["updated_at"] = utc_timestamp()
                self._state.vaults[vault_id] = updated
            return copy.deepcopy(updated)

    def _deleting(self, record: dict[str, Any]) -> None:
        for credential_id, credential in list(self._state.credentials.items()):
            if credential["vault_id"] == record["id"]:
                del self._state.credentials[credential_id]


class Credentials(Resource):
    """The routes of the vaults' credentials (``/v1/vaults/{id}/credentials``)."""

    def __init__(self, state: ClaudeState) -> None:
        super().__init__(state, state.credentials, f"/v1/vaults/{ID}/credentials")

    def routes(self) -> list[Route]:
        credential = f"/v1/vaults/{ID}/credentials/{ID}"
        return [
            ("POST", f"/v1/vaults/{ID}/credentials", self._create_credential),
            ("POST", credential, self._update_credential),
            ("POST", f"{credential}/mcp_oauth_validate", self._validate_credential),
            *super().routes(),
        ]

    def find(self, *ids: str) -> dict[str, Any]:
        """A credential of the vault (a 404 for an unknown vault, or another's credential)."""
        vault_id, credential_id = ids
        self._state.vaults.find(vault_id)
        credential = self._state.credentials.find(credential_id)
        if credential["vault_id"] != vault_id:
            raise _not_found("credential", credential_id)
        return credential

    def _listed(self, *ids: str) -> list[dict[str, Any]]:
        (vault_id,) = ids
        self._state.vaults.find(vault_id)
        return [c for c in self._state.credentials.values() if c["vault_id"] == vault_id]

    def _create_credential(self, exchange: Exchange, vault_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, frozenset({"auth", "display_name", "metadata"}))
        auth = _auth(body.get("auth"))
        now = utc_timestamp()
        with self._state.condition:
            if self._state.vaults.find(vault_id)["archived_at"]:
                raise _invalid("an archived vault takes no new credentials")
            credential = {
                "id": new_id("vcrd"),
                "type": "vault_credential",
                "vault_id": vault_id,
                "display_name": _display_name(body.get("display_name"), required=False),
                "auth": auth,
                "metadata": _merged_metadata({}, body.get("metadata") or {}),
                "created_at": now,
                "updated_at": now,
                "archived_at": None,
            }
            self._state.credentials[credential["id"]] = credential
            return copy.deepcopy(credential)

    def _update_credential(
        self, exchange: Exchange, vault_id: str, credential_id: str
    ) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, frozenset({"auth", "display_name", "metadata"}))
        with self._state.condition:
            credential = self.find(vault_id, credential_id)
            if credential["archived_at"]:
                raise _invalid("an archived credential cannot be updated")
            updated = copy.deepcopy(credential)
            if body.get("auth") is not None:
                updated["auth"] = _auth(body["auth"], credential["auth"])
            if body.get("display_name") is not None:
                updated["display_name"] = _display_name(body["display_name"], required=True)
            if body.get("metadata") is not None:
                updated["metadata"] = _merged_metadata(credential["metadata"], body["metadata"])
            updated["updated_at"] = utc_timestamp()  # a new secret changes nothing visible
            self._state.credentials[credential_id] = updated
            return copy.deepcopy(updated)

    def _validate_credential(
        self, exchange: Exchange, vault_id: str, credential_id: str
    ) -> dict[str, Any]:
        _reject_unknown(_json_object(exchange.request, optional=True), frozenset())
        with self._state.condition:
            auth = self.find(vault_id, credential_id)["auth"]
            if auth["type"] != "mcp_oauth":
                raise _invalid(
                    f"credential {credential_id!r} is a {auth['type']} credential; "
                    "only mcp_oauth credentials can be validated"
                )
            return {
                "type": "vault_credential_validation",
                "credential_id": credential_id,
                "vault_id": vault_id,
                "status": "valid",
                "has_refresh_token": auth.get("refresh") is not None,
                "mcp_probe": None,
                "refresh": None,
                "validated_at": utc_timestamp(),
            }
