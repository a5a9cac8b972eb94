"""`--endpoint-url http://...` is allowed only to this machine (issue 18, item 17): over plain http a request's
SigV4 signature and session token (AWS) or bearer token (GCP) travel in clear text. One shared check
(fabriccheck/endpoints.py) for the aws and gcp commands; for AWS it also holds where boto3 found the endpoint
itself (AWS_ENDPOINT_URL, the config file)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import boto3
import pytest
from cli_run import one_clean_line, run
from ec2_replay import Ec2Replay, serve

from fabriccheck.endpoints import check_endpoint_url, is_loopback
from fabriccheck.errors import FabricCheckError
from fabriccheck.provider import declaration
from fabriccheck.providers.aws import collect

AWS_CREDENTIAL = declaration("aws").endpoint_credential or ""
DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:4566",
        "http://127.8.9.10",
        "http://[::1]:8080/",
        "http://localhost:5000",
        "http://LOCALHOST.:5000",
        "http://[::ffff:127.0.0.1]:80",
        "https://ec2.us-east-1.amazonaws.com",
        "https://vpce-0123-abcd.ec2.us-east-1.vpce.amazonaws.com",
        "https://10.0.0.5:8443",
    ],
)
def test_https_anywhere_and_http_to_this_machine_are_allowed(url: str) -> None:
    check_endpoint_url(url, AWS_CREDENTIAL)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://10.0.0.5:4566", "plain http:// would send each request's SigV4 signature"),
        ("http://ec2.us-east-1.amazonaws.com", "plain http://"),
        ("http://169.254.169.254/latest", "plain http://"),
        ("http://127.0.0.1.nip.io:4566", "plain http://"),  # a name that resolves to loopback is not loopback
        ("HTTP://192.0.2.7", "plain http://"),
        ("ec2.us-east-1.amazonaws.com", "give the scheme and host"),
        ("ftp://127.0.0.1", "give the scheme and host"),
        ("http://127.0.0.1:port", "not a URL"),
    ],
)
def test_anything_else_is_refused(url: str, said: str) -> None:
    with pytest.raises(FabricCheckError, match=f"^--endpoint-url {url.split('//')[0]}") as caught:
        check_endpoint_url(url, AWS_CREDENTIAL)
    assert said in str(caught.value)


def test_loopback_is_an_address_or_localhost() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("128.0.0.1") and not is_loopback("localhost.example") and not is_loopback("::2")


def test_aws_over_plain_http_elsewhere_is_one_line_and_keeps_the_password_out() -> None:
    line = one_clean_line(run("aws", "--endpoint-url", "http://auditor:hunter2@192.0.2.10:4566", "-r", "us-east-1"))
    assert "--endpoint-url http://***@192.0.2.10:4566: plain http:// would send" in line
    assert "session token" in line and "hunter2" not in line


def test_gcp_over_plain_http_elsewhere_is_one_line() -> None:
    line = one_clean_line(run("gcp", "--endpoint-url", "http://10.1.2.3:8080", "-p", "alpha"))
    assert (
        "--endpoint-url http://10.1.2.3:8080: plain http:// would send the OAuth access token (good for an hour)"
        in line
    )


def test_an_endpoint_from_aws_endpoint_url_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """boto3 reads AWS_ENDPOINT_URL itself: the client's endpoint is checked before any request (the suite's
    socket guard would fail this test on any connection to 192.0.2.10)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://192.0.2.10:4566")
    with pytest.raises(FabricCheckError, match=r"the EC2 endpoint \(AWS_ENDPOINT_URL or config\) http://192\.0\.2\.10"):
        collect.collect_live(["us-east-1"], session=boto3.session.Session())
    result = run("aws", "-r", "us-east-1", env={**os.environ, "AWS_ENDPOINT_URL": "http://192.0.2.10:4566"})
    assert "AWS_ENDPOINT_URL or config) http://192.0.2.10:4566: plain http://" in one_clean_line(result)


def test_the_emulator_on_localhost_is_reached() -> None:
    replay = Ec2Replay.from_dump(DEMO)
    with serve(replay) as url:
        local = url.replace("127.0.0.1", "localhost")
        result = run("aws", "--endpoint-url", local, "-r", "us-east-1", "-f", "json")
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["complete"] is True and replay.calls
