"""A local AWS organization on 127.0.0.1: Organizations ListAccounts (JSON protocol), STS AssumeRole (query
protocol) and EC2 per account and region (ec2_replay's recorded answers), on one port, as AWS_ENDPOINT_URL
or --endpoint-url reaches it.

Each request is routed by its SigV4 credential scope (`Credential=KEY/DATE/REGION/SERVICE/...`): the service
picks the protocol, the region the EC2 answers, and the access key the account (AssumeRole hands out keys
that name their account; the caller's own key is the management account). Faults are injected per account,
region and action: AssumeRole denied, 5xx, slow answers (read timeouts), throttling for the first few
attempts of each call, expired credentials, a 200 that is not the call's answer. Every request is recorded as
(service, account, region, action) with the headers and body it carried, so tests can prove what was issued
and scan it for secrets.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from xml.sax.saxutils import escape

from ec2_replay import Ec2Replay, error_xml
from loopback import serving

MANAGEMENT = "999999999999"
_SCOPE = re.compile(r"Credential=([^/]+)/\d+/([^/]+)/([^/]+)/")
# Throttling answers as each protocol sends them: (HTTP status, error code).
THROTTLES = {
    "RequestLimitExceeded": (503, "RequestLimitExceeded"),
    "Throttling": (400, "Throttling"),
    "TooManyRequestsException": (429, "TooManyRequestsException"),
}


def key_of(account: str) -> str:
    """The access key AssumeRole hands out for `account`: the account is readable from it."""
    return f"ASIA{account}"


@dataclass
class Request:
    service: str
    account: str
    region: str
    action: str
    headers: dict[str, str]
    body: str


@dataclass
class FleetReplay:
    """accounts: account id -> region -> {dump file name -> CLI-shaped answer}."""

    accounts: dict[str, dict[str, dict[str, Any]]]
    suspended: set[str] = field(default_factory=set)  # listed by the organization, but not ACTIVE
    deny_assume: set[str] = field(default_factory=set)  # accounts whose role cannot be assumed
    fail: dict[tuple[str, str], int] = field(default_factory=dict)  # (account, region) -> HTTP 5xx to answer
    slow: dict[tuple[str, str], float] = field(default_factory=dict)  # (account, region) -> seconds before answering
    throttle: dict[str, int] = field(default_factory=dict)  # throttle code -> first attempts of each call answered so
    expired: bool = False  # the caller's own credentials have expired
    assumed_for: float | None = None  # seconds the credentials AssumeRole hands out last (None: until 2099)
    page_size: int = 2  # ListAccounts page size, to exercise paging
    # STS or Organizations action -> (content type, body) answered with HTTP 200 instead of its answer
    wrong: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Every 2xx answer sent under this Content-Type instead of its own: an emulator's or proxy's loose header (moto's
    # server answers Organizations' JSON as text/html; charset=utf-8)
    content_type: str | None = None
    requests: list[Request] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0  # the most EC2 requests answered at once
    lock: threading.Lock = field(default_factory=threading.Lock)
    _seen: dict[tuple[str, str, str, str], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ec2 = {a: Ec2Replay(regions) for a, regions in self.accounts.items()}

    def _throttled(self, account: str, region: str, action: str, body: str) -> tuple[int, str] | None:
        """The first attempts of each call (each distinct request) are throttled, one code after another."""
        codes = [code for code, times in self.throttle.items() for _ in range(times)]
        key = (account, region, action, body)
        with self.lock:
            seen = self._seen[key] = self._seen.get(key, 0) + 1
        if seen <= len(codes):
            status, code = THROTTLES[codes[seen - 1]]
            return status, code
        return None

    def respond(self, headers: dict[str, str], body: str) -> tuple[int, str, str]:
        match = _SCOPE.search(headers.get("Authorization", ""))
        key, region, service = match.groups() if match else ("", "us-east-1", "")
        account = key[4:] if key.startswith("ASIA") else MANAGEMENT
        if service == "organizations":
            action = headers.get("X-Amz-Target", "").rpartition(".")[2]
        else:
            action = urllib.parse.parse_qs(body).get("Action", [""])[0]
        with self.lock:
            self.requests.append(Request(service, account, region, action, headers, body))
        if self.expired and account == MANAGEMENT:
            message = "The security token included in the request is expired"
            if service == "organizations":
                return (
                    400,
                    "application/x-amz-json-1.1",
                    json.dumps({"__type": "ExpiredTokenException", "message": message}),
                )
            return 400, "text/xml", error_xml("ExpiredToken", message)
        throttled = self._throttled(account, region, action, body)
        if throttled is not None:
            status, code = throttled
            if service == "organizations":
                return status, "application/x-amz-json-1.1", json.dumps({"__type": code, "message": "Rate exceeded"})
            return status, "text/xml", error_xml(code, "Rate exceeded")
        if service in ("organizations", "sts") and action in self.wrong:
            return 200, *self.wrong[action]
        if service == "organizations":
            return self._organizations(body)
        if service == "sts":
            return self._assume(urllib.parse.parse_qs(body))
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return self._ec2(account, region, body)
        finally:
            with self.lock:
                self.in_flight -= 1

    def _ec2(self, account: str, region: str, body: str) -> tuple[int, str, str]:
        if (account, region) in self.slow:
            time.sleep(self.slow[(account, region)])
        if (account, region) in self.fail:
            return self.fail[(account, region)], "text/xml", error_xml("InternalError", "An internal error occurred")
        replay = self.ec2.get(account)
        if replay is None:
            return 401, "text/xml", error_xml("AuthFailure", "AWS was not able to validate the provided credentials")
        return replay.reply(region, urllib.parse.parse_qs(body, keep_blank_values=True))

    def _organizations(self, body: str) -> tuple[int, str, str]:
        start = int(json.loads(body or "{}").get("NextToken") or 0)
        ids = sorted(set(self.accounts) | self.suspended)
        page: dict[str, Any] = {
            "Accounts": [
                {
                    "Id": a,
                    "Arn": f"arn:aws:organizations::{MANAGEMENT}:account/o-example/{a}",
                    "Name": f"team-{a[-4:]}",
                    "Email": f"aws+{a}@example.com",
                    "Status": "SUSPENDED" if a in self.suspended else "ACTIVE",
                    "JoinedMethod": "CREATED",
                    "JoinedTimestamp": 1.7e9,
                }
                for a in ids[start : start + self.page_size]
            ]
        }
        if start + self.page_size < len(ids):
            page["NextToken"] = str(start + self.page_size)
        return 200, "application/x-amz-json-1.1", json.dumps(page)

    def _assume(self, params: dict[str, list[str]]) -> tuple[int, str, str]:
        arn = params["RoleArn"][0]
        account = arn.split(":")[4]
        if account in self.deny_assume or account not in self.accounts:
            message = (
                f"User: arn:aws:iam::{MANAGEMENT}:user/auditor is not authorized to perform: sts:AssumeRole "
                f"on resource: {arn}"
            )
            return 403, "text/xml", _sts_error("AccessDenied", message)
        credentials = (
            f"<AccessKeyId>{key_of(account)}</AccessKeyId><SecretAccessKey>assumed-secret-{account}</SecretAccessKey>"
            f"<SessionToken>assumed-token-{account}</SessionToken><Expiration>{self._expiration()}</Expiration>"
        )
        return (
            200,
            "text/xml",
            (
                '<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>'
                f"<Credentials>{credentials}</Credentials><AssumedRoleUser><AssumedRoleId>AROAEXAMPLE:fabriccheck"
                f"</AssumedRoleId><Arn>{escape(arn)}</Arn></AssumedRoleUser></AssumeRoleResult>"
                "<ResponseMetadata><RequestId>0</RequestId></ResponseMetadata></AssumeRoleResponse>"
            ),
        )

    def _expiration(self) -> str:
        if self.assumed_for is None:
            return "2099-01-01T00:00:00Z"
        until = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=self.assumed_for)
        return until.strftime("%Y-%m-%dT%H:%M:%SZ")

    def actions(self) -> list[tuple[str, str]]:
        return [(r.service, r.action) for r in self.requests]


def _sts_error(code: str, message: str) -> str:
    return (
        '<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type>'
        f"<Code>{code}</Code><Message>{escape(message)}</Message></Error><RequestId>0</RequestId></ErrorResponse>"
    )


@contextmanager
def serve(replay: FleetReplay) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(length).decode()
            status, kind, text = replay.respond(dict(self.headers.items()), body)
            if replay.content_type is not None and 200 <= status < 300:
                kind = replay.content_type
            data = text.encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client gave up waiting (a read timeout under test)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler, daemon_threads=True) as url:
        yield url
