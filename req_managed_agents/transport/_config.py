"""One way to read a setting: explicit argument, then environment variable, then default.

Every provider resolves its settings through :func:`setting` so the precedence is the same
everywhere. ``None`` and empty strings count as "not given" at every layer, so passing
``base_url=None`` falls through to the environment and then to the default instead of
producing an unusable ``None`` URL.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

from req_managed_agents.errors import ConfigurationError

__all__ = [
    "check_client_limits",
    "credential",
    "required_setting",
    "setting",
    "text_setting",
    "url_setting",
]

T = TypeVar("T")


def setting(explicit: T | None, env_var: str | None, default: T, convert: Callable[[str], T]) -> T:
    """Resolve one setting; ``convert`` parses the environment variable's text."""
    if explicit is not None and not (isinstance(explicit, str) and not explicit.strip()):
        return explicit
    raw = os.environ.get(env_var, "").strip() if env_var else ""
    if not raw:
        return default
    try:
        return convert(raw)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"environment variable {env_var} is invalid: {exc}") from exc


def text_setting(
    explicit: str | None, env_var: str | None, default: str | None = None
) -> str | None:
    """:func:`setting` for plain text."""
    return setting(explicit, env_var, default, str)


def required_setting(explicit: str | None, env_var: str, what: str) -> str:
    """Like :func:`setting` for a string that must exist; the error names the variable."""
    value = text_setting(explicit, env_var)
    if not value:
        raise ConfigurationError(f"no {what}: pass it explicitly or set {env_var}")
    return value


def credential(value: str, what: str) -> str:
    """A credential as sent in a header: surrounding whitespace (a pasted newline) dropped,
    anything else that is not printable ASCII refused with an error that names ``what``
    and never the value."""
    cleaned = value.strip()
    if not cleaned:
        raise ConfigurationError(f"the {what} is empty")
    if not all("!" <= char <= "~" for char in cleaned):
        raise ConfigurationError(
            f"the {what} contains spaces, control or non-ASCII characters; check how it was copied"
        )
    return cleaned


def url_setting(explicit: str | None, env_var: str, default: str) -> str:
    """:func:`text_setting` for a base URL, which must be http(s)."""
    url = text_setting(explicit, env_var, default) or default
    if not url.startswith(("https://", "http://")):
        raise ConfigurationError(f"base_url must be an http(s) URL, got {url!r}")
    return url


def check_client_limits(timeout: float, max_retries: int) -> None:
    """Refuse a timeout or a retry count no HTTP client can work with."""
    if timeout <= 0:
        raise ConfigurationError("timeout must be positive")
    if max_retries < 0:
        raise ConfigurationError("max_retries must not be negative")
