"""Every AWS credential and profile problem is a ``ConfigurationError`` that names the profile
and the files botocore read, never a secret: from both AWS providers' constructors, and
from a request whose credentials fail to refresh. Temporary AWS config files only, no
network."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("botocore")

from botocore.credentials import ReadOnlyCredentials
from botocore.exceptions import ClientError, CredentialRetrievalError

from req_managed_agents import (
    BedrockAgentCore,
    ClaudeManagedAgentsBedrock,
    ConfigurationError,
)

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYCANARYSECRETKEY"
KEY_ID = "AKIAIOSFODNN7EXAMPLE"
FAILING_PROCESS = f"{sys.executable} -c 'import sys; sys.exit(3)'"
CONFIG = f"""\
[profile ok]
region = eu-west-1
[profile partial]
aws_access_key_id = {KEY_ID}
[profile orphan]
role_arn = arn:aws:iam::123456789012:role/Reader
source_profile = gone
[profile loop_a]
role_arn = arn:aws:iam::123456789012:role/Reader
source_profile = loop_b
[profile loop_b]
role_arn = arn:aws:iam::123456789012:role/Reader
source_profile = loop_a
[profile odd_source]
role_arn = arn:aws:iam::123456789012:role/Reader
credential_source = Nowhere
[profile process]
credential_process = {FAILING_PROCESS}
[profile sso]
sso_start_url = https://example.awsapps.com/start
sso_region = us-east-1
sso_account_id = 123456789012
sso_role_name = Reader
region = us-east-1
[profile no_region]
"""
CREDENTIALS = f"""\
[ok]
aws_access_key_id = {KEY_ID}
aws_secret_access_key = {SECRET}
[no_region]
aws_access_key_id = {KEY_ID}
aws_secret_access_key = {SECRET}
"""

Provider = Callable[..., Any]
PROVIDERS = [
    pytest.param(BedrockAgentCore, id="agentcore"),
    pytest.param(ClaudeManagedAgentsBedrock, id="claude-bedrock"),
]


@pytest.fixture(autouse=True)
def aws_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Path, Path]:
    """A config and a credentials file of our own; nothing else of AWS's is read."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_BEARER_TOKEN_BEDROCK",
    ):
        monkeypatch.delenv(name, raising=False)
    config, credentials = tmp_path / "config", tmp_path / "credentials"
    config.write_text(CONFIG)
    credentials.write_text(CREDENTIALS)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("HOME", str(tmp_path))  # no cached SSO token
    return config, credentials


def refused(make: Provider, **kwargs: Any) -> str:
    with pytest.raises(ConfigurationError) as caught:
        make(**kwargs)
    message = str(caught.value)
    assert SECRET not in message
    return message


@pytest.mark.parametrize("make", PROVIDERS)
def test_a_profile_works_when_it_exists(make: Provider) -> None:
    provider = make(profile="ok")
    region = provider.region if hasattr(provider, "region") else provider.client.region
    assert region == "eu-west-1", "the profile's region"
    provider.close()


@pytest.mark.parametrize("make", PROVIDERS)
def test_a_missing_profile_names_it_and_the_files_looked_in(
    make: Provider, aws_files: tuple[Path, Path]
) -> None:
    config, credentials = aws_files
    message = refused(make, region="us-east-1", profile="nosuch")
    assert "AWS profile 'nosuch' (given as profile=) does not exist" in message
    assert f"{config} (AWS_CONFIG_FILE)" in message
    assert f"{credentials} (AWS_SHARED_CREDENTIALS_FILE)" in message


@pytest.mark.parametrize("make", PROVIDERS)
@pytest.mark.parametrize("variable", ["AWS_PROFILE", "AWS_DEFAULT_PROFILE"])
def test_a_missing_profile_from_the_environment_says_which_variable(
    make: Provider, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, "nosuch")
    message = refused(make, region="us-east-1")
    assert f"AWS profile 'nosuch' (from {variable}) does not exist" in message


@pytest.mark.parametrize("make", PROVIDERS)
def test_a_missing_profile_without_a_region_is_the_same_error(
    make: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_PROFILE", "nosuch")
    assert "AWS profile 'nosuch'" in refused(make)


@pytest.mark.parametrize("make", PROVIDERS)
@pytest.mark.parametrize(
    ("profile", "says"),
    [
        ("partial", "missing: aws_secret_access_key"),
        ("orphan", 'source_profile "gone"'),
        ("loop_a", "Infinite loop"),
        ("odd_source", 'credential source "Nowhere"'),
        ("process", "custom-process"),
        ("sso", "SSO"),
    ],
)
def test_every_broken_profile_is_a_configuration_error_naming_it(
    make: Provider, profile: str, says: str, aws_files: tuple[Path, Path]
) -> None:
    message = refused(make, region="us-east-1", profile=profile)
    assert f"AWS profile '{profile}' (given as profile=)" in message
    assert says in message
    assert str(aws_files[0]) in message


@pytest.mark.parametrize("make", PROVIDERS)
def test_an_unreadable_config_file_is_named(make: Provider, aws_files: tuple[Path, Path]) -> None:
    aws_files[0].write_text("[profile broken\nregion")
    message = refused(make, region="us-east-1")
    assert "Unable to parse config file" in message
    assert str(aws_files[0]) in message


@pytest.mark.parametrize("make", PROVIDERS)
def test_no_credentials_at_all_names_the_default_profile_and_files(
    make: Provider, aws_files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none either"))
    message = refused(make, region="us-east-1")
    assert "no AWS credentials found" in message
    assert "profile 'default'" in message
    assert str(tmp_path / "none either") in message


@pytest.mark.parametrize("make", PROVIDERS)
def test_a_profile_without_a_region_is_named(make: Provider) -> None:
    message = refused(make, profile="no_region")
    assert "no AWS region" in message
    assert "'no_region'" in message


class FailingRefresh:
    """Credentials (anything with ``get_frozen_credentials``) that freeze once, then fail
    to refresh the way ``failure`` says, as an expired SSO token or a denied role would."""

    def __init__(self, failure: Exception) -> None:
        self.failure = failure
        self.frozen = 0

    def get_frozen_credentials(self) -> ReadOnlyCredentials:
        self.frozen += 1
        if self.frozen > 1:
            raise self.failure
        return ReadOnlyCredentials(KEY_ID, SECRET, "IQoJb3JpZ2luCANARYTOKEN")


@pytest.mark.parametrize(
    "failure",
    [
        CredentialRetrievalError(provider="sso", error_msg="the token expired"),
        ClientError({"Error": {"Code": "AccessDenied", "Message": "not allowed"}}, "AssumeRole"),
    ],
    ids=["retrieval", "assume-role"],
)
def test_credentials_that_fail_to_refresh_fail_the_request_as_configuration(
    failure: Exception,
) -> None:
    with (
        BedrockAgentCore(
            "us-east-1",
            credentials=FailingRefresh(failure),
            control_endpoint_url="http://127.0.0.1:9",
        ) as provider,
        pytest.raises(ConfigurationError) as caught,
    ):
        provider.client.list_harnesses()
    message = str(caught.value)
    assert "AWS credentials failed to refresh" in message
    assert str(failure) in message
    assert SECRET not in message
