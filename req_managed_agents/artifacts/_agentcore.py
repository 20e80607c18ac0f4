"""``AgentCoreSessionStorage``: files in an AgentCore session's storage mount, through shell
commands run with ``InvokeAgentRuntimeCommand`` (no model, no tokens).

Everything that travels inside a command is either a checked name, the checked mount path,
or base64 text - all single-quoted - so neither a name nor a file's content can inject shell.
Content goes in and comes out base64-encoded, byte for byte (NUL bytes included). A ``put``
larger than one command allows is sent in chunks to a fresh temporary file, truncated first
and unique per call, and moved into place at the end, so readers never see half a file and a
failed ``put`` never corrupts the next one. Listing reports names base64-encoded too, so files
the agent wrote with unusual names cannot break the listing.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import re
import uuid
from typing import Any

from req_managed_agents.artifacts._base import check_name
from req_managed_agents.errors import (
    ArtifactNotFoundError,
    CommandFailedError,
    ConfigurationError,
    ManagedAgentsError,
)
from req_managed_agents.model._vocabulary import Artifact

__all__ = ["AgentCoreSessionStorage"]

# The API caps a command at 65,536 characters; chunks leave room for the command around them.
CHUNK_CHARACTERS = 60_000
_NOT_FOUND = 3
_MOUNT = re.compile(r"/[A-Za-z0-9._\-/]*")


class AgentCoreSessionStorage:
    """The files under ``mount`` in one runtime session (``client`` is
    ``BedrockAgentCore(...).client``). ``harness_arn`` is the session's harness: the commands
    go to the agent runtime behind it (``InvokeAgentRuntimeCommand`` takes the runtime's
    ARN), read once from ``GetHarness``; a runtime ARN is used as it is."""

    def __init__(
        self,
        client: Any,
        harness_arn: str,
        runtime_session_id: str,
        mount: str,
        *,
        timeout_seconds: int | None = None,
    ) -> None:
        mount = mount.rstrip("/") or "/"
        if not _MOUNT.fullmatch(mount) or ".." in mount.split("/"):
            raise ValueError(
                f"mount {mount!r} must be an absolute path of letters, digits, '.', '_', '-'"
            )
        self._client = client
        self.harness_arn = harness_arn
        self._runtime_arn: str | None = harness_arn if ":runtime/" in harness_arn else None
        self.runtime_session_id = runtime_session_id
        self.mount = mount
        self._timeout = timeout_seconds

    def __repr__(self) -> str:
        return (
            f"AgentCoreSessionStorage(runtime_session_id={self.runtime_session_id!r}, "
            f"mount={self.mount!r})"
        )

    @property
    def runtime_arn(self) -> str:
        """The ARN of the agent runtime the commands run on."""
        if self._runtime_arn is None:
            arn = self._client.runtime_arn(self.harness_arn)
            if not arn:
                raise ConfigurationError(
                    f"harness {self.harness_arn} names no agent runtime, so its session "
                    "storage cannot be reached"
                )
            self._runtime_arn = str(arn)
        return self._runtime_arn

    def _run(self, action: str, command: str, *, missing: str | None = None) -> str:
        result = self._client.invoke_agent_runtime_command(
            self.runtime_arn, self.runtime_session_id, command, timeout_seconds=self._timeout
        )
        if result.exit_code == _NOT_FOUND and missing is not None:
            raise ArtifactNotFoundError(
                missing, f"{self.mount} of session {self.runtime_session_id}"
            )
        if result.exit_code != 0:
            raise CommandFailedError(action, result.exit_code, result.stderr)
        return str(result.stdout)

    def _path(self, name: str) -> str:
        return f"'{self.mount}/{check_name(name)}'"

    def list(self) -> list[Artifact]:
        """The regular files directly under the mount, by name."""
        script = (
            f"cd '{self.mount}' || exit 1; "
            "for f in * .[!.]* ..?*; do "
            '[ -f "$f" ] || continue; '
            "printf '%s %s\\n' \"$(wc -c < \"$f\" | tr -d ' ')\" "
            "\"$(printf '%s' \"$f\" | base64 | tr -d '\\n')\"; "
            "done"
        )
        artifacts = []
        for line in self._run("listing artifacts", script).splitlines():
            size, _, encoded = line.strip().partition(" ")
            try:
                name = base64.b64decode(encoded, validate=True).decode("utf-8", "replace")
                artifact = Artifact(name, int(size), f"{self.mount}/{name}")
            except (ValueError, binascii.Error):
                raise CommandFailedError(
                    "listing artifacts", 0, f"unexpected output {line!r}"
                ) from None
            if not _is_temporary(name):
                artifacts.append(artifact)
        return sorted(artifacts, key=lambda artifact: artifact.name)

    def fetch(self, name: str) -> bytes:
        """The bytes of ``name``."""
        path = self._path(name)
        output = self._run(
            f"fetching {name!r}",
            f"[ -f {path} ] || exit {_NOT_FOUND}; base64 < {path}",
            missing=name,
        )
        try:
            return base64.b64decode("".join(output.split()), validate=True)
        except binascii.Error as exc:
            raise CommandFailedError(
                f"fetching {name!r}", 0, f"output is not base64: {exc}"
            ) from exc

    def put(self, name: str, data: bytes) -> Artifact:
        """Store ``data`` as ``name`` (replacing it atomically if it exists)."""
        path = self._path(name)
        temp = f"'{self.mount}/.{name}.{uuid.uuid4().hex}.part'"
        encoded = base64.b64encode(bytes(data)).decode("ascii")
        self._run(f"storing {name!r}", f"mkdir -p '{self.mount}' && : > {temp}")
        try:
            for start in range(0, len(encoded), CHUNK_CHARACTERS):
                chunk = encoded[start : start + CHUNK_CHARACTERS]  # whole 4-character groups
                self._run(f"storing {name!r}", f"printf '%s' '{chunk}' | base64 -d >> {temp}")
            self._run(f"storing {name!r}", f"mv -f {temp} {path}")
        except BaseException:
            with contextlib.suppress(ManagedAgentsError):
                self._run(f"cleaning up after {name!r}", f"rm -f {temp}")
            raise
        return Artifact(name, len(data), f"{self.mount}/{name}")

    def delete(self, name: str) -> None:
        """Remove ``name``."""
        path = self._path(name)
        self._run(
            f"deleting {name!r}", f"[ -f {path} ] || exit {_NOT_FOUND}; rm -f {path}", missing=name
        )


def _is_temporary(name: str) -> bool:
    """A ``put`` still in progress (or one that died mid-way)."""
    return name.startswith(".") and name.endswith(".part")
