"""SigV4 verification for the AgentCore emulator: every request's signature, recomputed.

A request must be signed with the emulator's access key (and carry its session token, when
it has one) for its service (``bedrock-agentcore``; the Claude emulator's Bedrock flavor
checks ``bedrock``) in the emulator's region, within 15 minutes of
the server's clock; the emulator rebuilds the canonical request from the bytes it received
and recomputes the signature with botocore, so a client's signing is under test. Failures
are answered as AWS answers them: a 403 ``MissingAuthenticationTokenException``,
``UnrecognizedClientException`` or ``InvalidSignatureException``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from req_managed_agents.testing.agentcore._wire import _AwsError

if TYPE_CHECKING:
    from req_managed_agents.testing.server import RecordedRequest

_SIGNING_NAME = "bedrock-agentcore"
_AMZ_DATE = "%Y%m%dT%H%M%SZ"
_MAX_CLOCK_SKEW = timedelta(minutes=15)
_TOKEN_INVALID = "The security token included in the request is invalid."


def _random_keys() -> tuple[str, str]:
    """A made-up access key id (``AKIA`` and 16 capitals or digits, as AWS makes them) and
    secret access key, for an emulator given none."""
    alphabet = string.ascii_uppercase + string.digits
    key_id = "AKIA" + "".join(secrets.choice(alphabet) for _ in range(16))
    return key_id, "".join(secrets.choice(alphabet + string.ascii_lowercase) for _ in range(40))


def _signature_error(name: str, message: str) -> _AwsError:
    return _AwsError(403, name, message)


class _SigV4Verifier:
    """Checks the SigV4 signatures of requests to one emulator: signed with its keys (and
    ``session_token``, when it has one) in its ``region``, scoped to ``service``. botocore
    (the ``[aws]`` extra) recomputes them.
    """

    def __init__(
        self,
        access_key_id: str,
        secret_access_key: str,
        region: str,
        *,
        session_token: str | None = None,
        service: str = _SIGNING_NAME,
    ) -> None:
        from req_managed_agents.transport._aws import load_botocore  # only with [aws]

        credentials = load_botocore()["credentials"].Credentials
        self._credentials = credentials(access_key_id, secret_access_key, session_token)
        self._region = region
        self._service = service

    def verify(self, request: RecordedRequest) -> None:
        """Recompute the request's SigV4 signature with botocore and compare; raises an
        :class:`_AwsError` (403) naming what is wrong."""
        headers = request.headers
        authorization = headers.get("authorization")
        if authorization is None:
            raise _signature_error(
                "MissingAuthenticationTokenException", "Missing Authentication Token"
            )
        algorithm, _, rest = authorization.partition(" ")
        fields = dict(part.strip().partition("=")[::2] for part in rest.split(","))
        scope = fields.get("Credential", "").split("/")
        if not hmac.compare_digest(scope[0].encode(), self._credentials.access_key.encode()):
            raise _signature_error("UnrecognizedClientException", _TOKEN_INVALID)
        token = headers.get("x-amz-security-token")
        if (token is None) != (self._credentials.token is None) or not hmac.compare_digest(
            (token or "").encode(), (self._credentials.token or "").encode()
        ):
            raise _signature_error("UnrecognizedClientException", _TOKEN_INVALID)
        problem = self._signature_problem(request, algorithm, fields, scope)
        if problem is not None:
            raise _signature_error("InvalidSignatureException", problem)

    def _signature_problem(
        self, request: RecordedRequest, algorithm: str, fields: dict[str, str], scope: list[str]
    ) -> str | None:
        """What is wrong with a request signed with the right access key, if anything."""
        headers = request.headers
        if (
            algorithm != "AWS4-HMAC-SHA256"
            or not {"Credential", "SignedHeaders", "Signature"} <= fields.keys()
            or len(scope) != 5
        ):
            return (
                "Authorization must be AWS4-HMAC-SHA256 Credential=<access key id>/<date>/"
                "<region>/<service>/aws4_request, SignedHeaders=..., Signature=..."
            )
        _, day, region, service, terminator = scope
        amz_date = headers.get("x-amz-date", "")
        try:
            signed_at = datetime.strptime(amz_date, _AMZ_DATE).replace(tzinfo=timezone.utc)
        except ValueError:
            return "x-amz-date must be given as YYYYMMDDTHHMMSSZ"
        if abs(datetime.now(timezone.utc) - signed_at) > _MAX_CLOCK_SKEW:
            return f"Signature expired: {amz_date} is more than 15 minutes from the server time"
        if day != amz_date[:8]:
            return f"Credential date {day} does not match x-amz-date {amz_date}"
        if region != self._region:
            return f"Credential should be scoped to a valid region, not '{region}'"
        if service != self._service:
            return f"Credential should be scoped to correct service: '{self._service}'"
        if terminator != "aws4_request":
            return "Credential should be scoped with a valid terminator: 'aws4_request'"
        signed = fields["SignedHeaders"].split(";")
        if {"host", "x-amz-date"} - set(signed) or any(name not in headers for name in signed):
            return "SignedHeaders must name host and x-amz-date, and only headers present"
        # botocore signs this header's value instead of hashing the body, so check it here.
        claimed = headers.get("x-amz-content-sha256")
        if claimed not in (None, hashlib.sha256(request.raw_body).hexdigest()):
            return "x-amz-content-sha256 does not match the request body"
        expected = self._signature(request, {name: headers[name] for name in signed}, amz_date)
        if not hmac.compare_digest(expected.encode(), fields["Signature"].encode()):
            return "The request signature we calculated does not match the signature you provided"
        return None

    def _signature(self, request: RecordedRequest, signed: dict[str, str], amz_date: str) -> str:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        url = f"http://{signed['host']}{request.path}"
        if request.raw_query:
            url += f"?{request.raw_query}"
        rebuilt = AWSRequest(method=request.method, url=url, data=request.raw_body, headers=signed)
        rebuilt.context["timestamp"] = amz_date
        signer = SigV4Auth(self._credentials, self._service, self._region)
        canonical = signer.canonical_request(rebuilt)
        return str(signer.signature(signer.string_to_sign(rebuilt, canonical), rebuilt))
