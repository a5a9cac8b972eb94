"""A local EC2 endpoint (127.0.0.1 only) that replays recorded answers over the real EC2 query protocol.

moto cannot show EFA interfaces, network cards or placement groups (reference/testing.md), so collector tests
that need a correctly configured EFA cluster serve recorded `aws ec2 describe-* --output json` answers here.
The answers are serialized to EC2 XML from botocore's own service model, so boto3 parses them exactly as it
parses AWS. Pages follow MaxResults/NextToken; throttling and access-denied errors can be injected per call;
every request is recorded (region, action) for call counting and read-only proofs; any action can be answered
with a 200 that is not its answer (`wrong`).
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import botocore.session
from loopback import serving

_MODEL = botocore.session.get_session().get_service_model("ec2")
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def _xml(shape: Any, value: Any) -> str:
    kind = shape.type_name
    if kind == "structure":
        out = []
        for name, member in shape.members.items():
            if name in value and value[name] is not None:
                tag = member.serialization.get("name", name)
                out.append(f"<{tag}>{_xml(member, value[name])}</{tag}>")
        return "".join(out)
    if kind == "list":
        tag = shape.member.serialization.get("name", "member")
        return "".join(f"<{tag}>{_xml(shape.member, item)}</{tag}>" for item in value)
    if kind == "boolean":
        return "true" if value else "false"
    return escape(str(value))


def answer_xml(action: str, answer: dict[str, Any]) -> str:
    output = _MODEL.operation_model(action).output_shape
    body = _xml(output, answer)
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<{action}Response xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
        f"<requestId>00000000-0000-0000-0000-000000000000</requestId>{body}</{action}Response>"
    )


def error_xml(code: str, message: str) -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>{code}</Code>'
        f"<Message>{escape(message)}</Message></Error></Errors><RequestID>0</RequestID></Response>"
    )


class Ec2Replay:
    """answers: region -> {dump file name -> CLI-shaped answer}."""

    def __init__(self, answers: dict[str, dict[str, Any]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str]] = []
        self.throttle: dict[str, int] = {}  # action -> how many times to answer RequestLimitExceeded first
        self.deny: set[str] = set()  # actions answered with UnauthorizedOperation
        # action -> (content type, body) answered with HTTP 200 instead of the action's answer: a captive portal's
        # page, another call's answer, an answer without its list
        self.wrong: dict[str, tuple[str, str]] = {}
        self.lock = threading.Lock()

    @classmethod
    def from_dump(cls, folder: Path, region: str = "us-east-1") -> Ec2Replay:
        return cls({region: {p.name: json.loads(p.read_text()) for p in folder.glob("describe-*.json")}})

    def reply(self, region: str, params: dict[str, list[str]]) -> tuple[int, str, str]:
        """(HTTP status, content type, body) for one request."""
        wrong = self.wrong.get(params["Action"][0])
        if wrong is not None:
            with self.lock:
                self.calls.append((region, params["Action"][0]))
            return 200, *wrong
        status, body = self.respond(region, params)
        return status, "text/xml;charset=UTF-8", body

    def respond(self, region: str, params: dict[str, list[str]]) -> tuple[int, str]:
        action = params["Action"][0]
        with self.lock:
            self.calls.append((region, action))
            if self.throttle.get(action, 0) > 0:
                self.throttle[action] -= 1
                return 503, error_xml("RequestLimitExceeded", "Request limit exceeded.")
        if action in self.deny:
            return 403, error_xml("UnauthorizedOperation", f"You are not authorized to perform: ec2:{action}")
        if action == "DescribeRegions":
            return 200, answer_xml(
                action,
                {
                    "Regions": [
                        {"RegionName": r, "Endpoint": "x", "OptInStatus": "opt-in-not-required"}
                        for r in sorted(self.answers)
                    ]
                },
            )
        file = _CAMEL.sub("-", action).lower() + ".json"
        answer = self.answers.get(region, {}).get(file)
        output = _MODEL.operation_model(action).output_shape
        list_key = next(n for n, m in output.members.items() if m.type_name == "list")
        items = list((answer or {}).get(list_key, []))
        items = _filter(action, items, params)
        start = int(params.get("NextToken", ["0"])[0])
        size = int(params.get("MaxResults", [str(len(items) or 1)])[0])
        page: dict[str, list[dict[str, Any]] | str] = {list_key: items[start : start + size]}
        if start + size < len(items):
            page["NextToken"] = str(start + size)
        return 200, answer_xml(action, page)


def _filter(action: str, items: list[dict[str, Any]], params: dict[str, list[str]]) -> list[dict[str, Any]]:
    if action == "DescribeInstanceTypes":
        wanted = [v[0] for k, v in params.items() if k.startswith("InstanceType.")]
        if wanted:
            return [t for t in items if t["InstanceType"] in wanted]
        if params.get("Filter.1.Name") == ["network-info.efa-supported"]:
            return [t for t in items if t.get("NetworkInfo", {}).get("EfaSupported")]
    if action == "DescribeInstances" and params.get("Filter.1.Name") == ["instance-state-name"]:
        states = {v[0] for k, v in params.items() if k.startswith("Filter.1.Value.")}
        return [{**r, "Instances": [i for i in r["Instances"] if i["State"]["Name"] in states]} for r in items]
    return items


_SCOPE = re.compile(r"Credential=[^/]+/\d+/([^/]+)/ec2/")


@contextmanager
def serve(replay: Ec2Replay) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            params = urllib.parse.parse_qs(self.rfile.read(length).decode(), keep_blank_values=True)
            scope = _SCOPE.search(self.headers.get("Authorization", ""))
            status, kind, body = replay.reply(scope.group(1) if scope else "us-east-1", params)
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler) as url:
        yield url
