"""AWS credentials, region and SigV4 signing, all delegated to botocore, for the providers
that run on AWS (each names the service it signs for).

botocore is an optional dependency (the ``[aws]`` extra) loaded here on first use, never at
package import. Credentials come from botocore's standard chain (environment, shared config
and profiles, SSO, container and instance roles) unless given explicitly; refreshable
temporary credentials are frozen afresh for every request, so a long session keeps signing
after a refresh. Only the headers that must be signed are (host, content type, the
``x-amz-*``/``x-amzn-*`` headers): what a proxy may rewrite (``Connection``, ``User-Agent``)
stays outside the signature.

Whatever goes wrong with credentials or profiles (a missing or broken profile, an unreadable
config file, an SSO token or credential process that fails, a refresh that fails mid-run)
is a :class:`ConfigurationError` naming the profile, where its name came from and the files
botocore read: botocore's own exceptions never escape.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

import requests

from req_managed_agents._redact import Secret, get_logger, register_secret
from req_managed_agents.errors import ConfigurationError, MissingDependencyError
from req_managed_agents.transport._config import credential, text_setting

__all__ = ["AwsSigner", "load_botocore", "resolve_credentials", "resolve_region"]

_INSTALL_HINT = "pip install 'req-managed-agents[aws]'"


def load_botocore() -> dict[str, ModuleType]:
    """Import the botocore modules we use, or explain which extra to install."""
    try:
        modules = {
            name: importlib.import_module(f"botocore.{name}")
            for name in ("auth", "awsrequest", "credentials", "exceptions", "session")
        }
    except ImportError as exc:
        raise MissingDependencyError(
            f"AWS providers need botocore: {_INSTALL_HINT}", extra="aws"
        ) from exc
    # botocore logs canonical requests (with the session token) at DEBUG: mask them.
    get_logger("botocore.auth")
    return modules


def resolve_region(
    explicit: str | None, session: Any, profile: str | None, botocore: Mapping[str, ModuleType]
) -> str:
    """The region: explicit, ``AWS_REGION``, then botocore's (``AWS_DEFAULT_REGION``, the
    config of the session's ``profile``)."""
    region = text_setting(explicit, "AWS_REGION")
    if not region:
        with _profile_trouble(session, profile, botocore):
            region = session.get_config_variable("region")
    if not region:
        name, _ = _profile_origin(profile)
        raise ConfigurationError(
            f"no AWS region: pass region= or set AWS_REGION (or a region in profile {name!r} "
            f"of {_files(session)})"
        )
    return str(region)


class AwsSigner:
    """Signs prepared ``requests`` with SigV4 for ``service`` in ``region``."""

    def __init__(
        self,
        credentials: Any,
        region: str,
        botocore: Mapping[str, ModuleType],
        service: str,
    ) -> None:
        self.region = region
        self.service = service
        self._credentials = credentials
        self._auth = botocore["auth"]
        self._request_class = botocore["awsrequest"].AWSRequest
        self._trouble = _trouble_types(botocore)
        frozen = self._frozen()
        for value in (frozen.secret_key, frozen.token):
            if value:
                register_secret(value)

    def __repr__(self) -> str:
        return f"AwsSigner(service={self.service!r}, region={self.region!r}, credentials=***)"

    @property
    def access_key_id(self) -> str:
        return str(self._frozen().access_key)

    def _frozen(self) -> Any:
        """The credentials as of now: temporary ones refresh here, and a refresh that fails
        (an expired SSO token, a role that may no longer be assumed) is a configuration
        problem, not a bug."""
        try:
            return self._credentials.get_frozen_credentials()
        except self._trouble as exc:
            raise ConfigurationError(f"AWS credentials failed to refresh: {exc}") from exc

    def __call__(self, request: requests.PreparedRequest) -> None:
        frozen = self._frozen()
        for value in (frozen.secret_key, frozen.token):
            if value:
                register_secret(value)  # a refresh may have brought new ones
        signed_names = {
            name
            for name in request.headers
            if name.lower() == "content-type" or name.lower().startswith(("x-amz-", "x-amzn-"))
        }
        url = request.url or ""
        to_sign = self._request_class(
            method=request.method,
            url=url,
            data=request.body or b"",
            headers={name: request.headers[name] for name in signed_names},
        )
        self._auth.SigV4Auth(frozen, self.service, self.region).add_auth(to_sign)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            value = to_sign.headers.get(name)
            if value is not None:
                request.headers[name] = value


def resolve_credentials(
    explicit: Any, profile: str | None, botocore: Mapping[str, ModuleType]
) -> tuple[Any, Any]:
    """``(credentials, botocore session)`` from an explicit value or the standard chain.

    ``explicit`` may be a botocore credentials object (anything with
    ``get_frozen_credentials``) or a mapping with ``access_key_id``, ``secret_access_key``
    and optionally ``session_token`` (``aws_``-prefixed names work too).
    """
    session = botocore["session"].Session(profile=profile)
    if explicit is None:
        with _profile_trouble(session, profile, botocore):
            credentials = session.get_credentials()
            if credentials is not None:
                credentials.get_frozen_credentials()  # an SSO token or a process runs now
        if credentials is None:
            name, origin = _profile_origin(profile)
            raise ConfigurationError(
                "no AWS credentials found in the environment, an SSO login, a container or "
                f"instance role, or profile {name!r} {origin} (looked in {_files(session)}); "
                "pass credentials= or configure one"
            )
        return credentials, session
    if hasattr(explicit, "get_frozen_credentials"):
        return explicit, session
    if isinstance(explicit, Mapping):

        def pick(*names: str) -> str | None:
            for name in names:
                value = explicit.get(name) or explicit.get(f"aws_{name}")
                if isinstance(value, Secret):
                    value = value.reveal()
                if value:
                    return credential(str(value), f"AWS {name.replace('_', ' ')}")
            return None

        key = pick("access_key_id")
        secret = pick("secret_access_key")
        if not key or not secret:
            raise ConfigurationError("credentials need access_key_id and secret_access_key")
        credentials = botocore["credentials"].Credentials(key, secret, pick("session_token"))
        return credentials, session
    raise ConfigurationError(
        "credentials must be a botocore credentials object or a mapping of "
        "access_key_id / secret_access_key / session_token"
    )


def _trouble_types(botocore: Mapping[str, ModuleType]) -> tuple[type[Exception], ...]:
    """What botocore raises for credential and configuration trouble: its own errors, and a
    service's refusal while fetching credentials (STS AssumeRole, SSO GetRoleCredentials)."""
    exceptions = botocore["exceptions"]
    return (exceptions.BotoCoreError, exceptions.ClientError)


@contextlib.contextmanager
def _profile_trouble(
    session: Any, profile: str | None, botocore: Mapping[str, ModuleType]
) -> Iterator[None]:
    """Turn botocore's credential and profile errors into a :class:`ConfigurationError`
    that names the profile and the files it was looked for in (never a value from them)."""
    try:
        yield
    except _trouble_types(botocore) as exc:
        name, origin = _profile_origin(profile)
        if isinstance(exc, botocore["exceptions"].ProfileNotFound):
            problem = "does not exist"
        else:
            problem = f"cannot be used: {exc}"
        raise ConfigurationError(
            f"AWS profile {name!r} {origin} {problem}; looked in {_files(session)}"
        ) from exc


def _profile_origin(profile: str | None) -> tuple[str, str]:
    """The profile botocore uses (``profile`` when given) and where its name came from, in
    botocore's order."""
    if profile is not None:
        return profile, "(given as profile=)"
    for variable in ("AWS_DEFAULT_PROFILE", "AWS_PROFILE"):
        value = os.environ.get(variable)
        if value:
            return value, f"(from {variable})"
    return "default", "(none named)"


def _files(session: Any) -> str:
    """The shared config and credentials files botocore reads, and what chose each."""
    found = []
    for setting, variable in (
        ("config_file", "AWS_CONFIG_FILE"),
        ("credentials_file", "AWS_SHARED_CREDENTIALS_FILE"),
    ):
        path = os.path.expanduser(str(session.get_config_variable(setting)))
        found.append(f"{path} ({variable if os.environ.get(variable) else 'the default'})")
    return " and ".join(found)
