"""A local Azure Resource Manager endpoint (https://127.0.0.1 only) that replays recorded ARM JSON.

The Azure SDK's bearer-token policy refuses plain http, so it serves TLS with a self-signed certificate for
127.0.0.1 made here (reference/testing.md). Answers are ARM list pages (`{"value": [...], "nextLink": ...}`)
with nextLink pointing back at this server; a 403 (AuthorizationFailed) per subscription and 429s with
Retry-After per list can be injected; every request is recorded (method, path) for call counting and the
read-only proof. VM lists answer as ARM does: without instance views, unless asked (statusOnly=true,
$expand=instanceView). Faults (FAULTS) replace a list's answers: 200s that are not the page (`{}`, HTML, an empty
body, a value of another type), nextLinks that loop, connection resets; and the endpoint can die mid-run.
A fake `az` for AzureCliCredential is written by `fake_az`.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import socket
import ssl
import struct
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

# path tail (after /subscriptions/{s}) -> dump file holding the answer
_ROUTES = (
    (re.compile(r"^/providers/microsoft\.compute/virtualmachines$"), "vm-list.json"),
    (re.compile(r"^/providers/microsoft\.compute/virtualmachinescalesets$"), "vmss-list.json"),
    (
        re.compile(
            r"^/resourcegroups/[^/]+/providers/microsoft\.compute/virtualmachinescalesets/[^/]+/virtualmachines$"
        ),
        "vmss-list-instances.json",
    ),
    (re.compile(r"^/providers/microsoft\.compute/availabilitysets$"), "vm-availability-set-list.json"),
    (re.compile(r"^/providers/microsoft\.compute/proximityplacementgroups$"), "ppg-list.json"),
    (re.compile(r"^/providers/microsoft\.compute/skus$"), "vm-list-skus.json"),
    (re.compile(r"^/providers/microsoft\.network/networkinterfaces$"), "network-nic-list.json"),
    (re.compile(r"^/providers/microsoft\.network/virtualnetworks$"), "network-vnet-list.json"),
)


@dataclass
class ArmReplay:
    """answers: subscription -> {dump file name -> list of ARM items}."""

    answers: dict[str, dict[str, list[dict[str, Any]]]]
    page_size: int = 2
    calls: list[tuple[str, str]] = field(default_factory=list)
    deny: set[str] = field(default_factory=set)  # subscriptions answered 403 AuthorizationFailed
    throttle: dict[str, int] = field(default_factory=dict)  # dump file -> how many 429s first
    retry_after: str = "1"
    fail: dict[str, int] = field(default_factory=dict)  # dump file -> how many 503s first
    port: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    # management group -> its child groups and subscriptions, as ("group" | "subscription", name)
    management_groups: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    expired: bool = False  # every request answered 401 ExpiredAuthenticationToken
    # dump file name (the VMs' statusOnly list: "vm-list.json?statusOnly"; the subscriptions list: "subscriptions")
    # -> a fault its answers get instead (FAULTS); `die_after` requests, the endpoint goes away for good.
    faults: dict[str, str] = field(default_factory=dict)
    die_after: int | None = None
    kill: Any = None  # set by serve(): stops the server and closes its socket

    def respond(self, method: str, raw_path: str) -> tuple[int, dict[str, str], Any]:
        parsed = urllib.parse.urlsplit(raw_path)
        path = parsed.path.rstrip("/")
        query = urllib.parse.parse_qs(parsed.query)
        with self.lock:  # the statusOnly list of VMs is told apart by its query (count() by path suffix)
            self.calls.append((method, path + ("?statusOnly=true" if query.get("statusOnly") == ["true"] else "")))
            dying = self.die_after is not None and len(self.calls) > self.die_after
        if dying:
            if self.kill is not None:
                threading.Thread(target=self.kill, daemon=True).start()
            return 0, {}, RESET
        if method != "GET":
            return 405, {}, {"error": {"code": "MethodNotAllowed", "message": "read-only replay"}}
        if self.expired:
            message = "The access token expiry UTC time '1/1/2026 12:00:00 AM' is earlier than current UTC time."
            return 401, {}, {"error": {"code": "ExpiredAuthenticationToken", "message": message}}
        management = re.match(r"^/providers/microsoft\.management/managementgroups/([^/]+)/descendants$", path.lower())
        if management:
            return self._descendants(management.group(1), query)
        if path.lower() == "/subscriptions":
            if "subscriptions" in self.faults:
                return _fault(self.faults["subscriptions"], {"value": []}, raw_path, self.port)
            return 200, {}, {"value": [{"subscriptionId": s, "displayName": s} for s in sorted(self.answers)]}
        match = re.match(r"^/subscriptions/([^/]+)(/.*)$", path, re.IGNORECASE)
        if not match:
            return 404, {}, {"error": {"code": "NotFound", "message": path}}
        subscription, tail = match.group(1).lower(), match.group(2).lower()
        if subscription not in self.answers:
            return 404, {}, {"error": {"code": "SubscriptionNotFound", "message": f"{subscription} not found"}}
        if subscription in self.deny:
            message = (
                f"The client does not have authorization to perform action over scope /subscriptions/{subscription}"
            )
            return 403, {}, {"error": {"code": "AuthorizationFailed", "message": message}}
        name = next((n for pattern, n in _ROUTES if pattern.match(tail)), None)
        group = None
        if name is None:  # a list within one resource group (--resource-group)
            scoped = re.match(r"^/resourcegroups/([^/]+)(/providers/.*)$", tail)
            if scoped:
                group = scoped.group(1)
                name = next((n for pattern, n in _ROUTES if pattern.match(scoped.group(2))), None)
        if name is None:
            return 404, {}, {"error": {"code": "NotFound", "message": tail}}
        with self.lock:
            if self.fail.get(name, 0) > 0:
                self.fail[name] -= 1
                return 503, {}, {"error": {"code": "ServiceUnavailable", "message": "try later"}}
            if self.throttle.get(name, 0) > 0:
                self.throttle[name] -= 1
                return (
                    429,
                    {"Retry-After": self.retry_after},
                    {"error": {"code": "TooManyRequests", "message": "throttled"}},
                )
        items = self.answers[subscription].get(name, [])
        if name == "vmss-list-instances.json":
            prefix = path.lower().rsplit("/virtualmachines", 1)[0] + "/"
            items = [i for i in items if str(i["id"]).lower().startswith(prefix)]
        items = _viewed(items, query)
        if group is not None:
            items = [i for i in items if f"/resourcegroups/{group}/" in str(i["id"]).lower()]
        start = int(query.get("$skiptoken", ["0"])[0])
        page: dict[str, Any] = {"value": items[start : start + self.page_size]}
        if start + self.page_size < len(items):
            rest = {k: v[0] for k, v in query.items() if k != "$skiptoken"}
            rest["$skiptoken"] = str(start + self.page_size)
            page["nextLink"] = f"https://127.0.0.1:{self.port}{parsed.path}?{urllib.parse.urlencode(rest)}"
        fault = self.faults.get(name + ("?statusOnly" if query.get("statusOnly") == ["true"] else ""))
        if fault is not None:
            return _fault(fault, page, raw_path, self.port)
        return 200, {}, page

    def _descendants(self, group: str, query: dict[str, list[str]]) -> tuple[int, dict[str, str], Any]:
        """Every group and subscription below `group`, one per page (nextLink paging), as ARM lists them."""
        if group not in self.management_groups:
            return 404, {}, {"error": {"code": "NotFound", "message": f"management group {group} not found"}}
        found: list[dict[str, Any]] = []
        pending = [group]
        while pending:
            parent = pending.pop(0)
            for kind, name in self.management_groups.get(parent, []):
                if kind == "group":
                    pending.append(name)
                    item_type, item_id = (
                        "Microsoft.Management/managementGroups",
                        f"/providers/Microsoft.Management/managementGroups/{name}",
                    )
                else:
                    item_type, item_id = "Microsoft.Management/managementGroups/subscriptions", f"/subscriptions/{name}"
                found.append({"id": item_id, "type": item_type, "name": name, "properties": {"displayName": name}})
        start = int(query.get("$skiptoken", ["0"])[0])
        page: dict[str, Any] = {"value": found[start : start + 1]}
        if start + 1 < len(found):
            page["nextLink"] = (
                f"https://127.0.0.1:{self.port}/providers/Microsoft.Management/managementGroups/{group}/descendants"
                f"?api-version=2020-05-01&$skiptoken={start + 1}"
            )
        return 200, {}, page

    def count(self, suffix: str) -> int:
        """Requests whose path ends with `suffix` (case-insensitive, as ARM paths are)."""
        return sum(1 for _, path in self.calls if path.lower().endswith(suffix.lower()))


RESET = object()  # the answer is a reset connection: the request was read, and nothing is sent back

# What a fault makes of a list's answer (each a 200 unless it is a reset): what a captive portal, a cut proxy or a
# broken gateway sends instead of the page.
FAULTS = ("empty-object", "html", "empty-body", "value-object", "value-string", "value-numbers", "self-link",
          "loop", "reset")  # fmt: skip


def _fault(kind: str, page: dict[str, Any], raw_path: str, port: int) -> tuple[int, dict[str, str], Any]:
    html = {"Content-Type": "text/html; charset=utf-8"}
    if kind == "empty-object":
        return 200, {}, {}
    if kind == "html":
        return 200, html, b"<!DOCTYPE html><html><head><title>Sign in to Wi-Fi</title></head><body></body></html>"
    if kind == "empty-body":
        return 200, {}, b""
    if kind == "value-object":
        return 200, {}, {"value": {"id": "/subscriptions/x"}}
    if kind == "value-string":
        return 200, {}, {"value": "[]"}
    if kind == "value-numbers":
        return 200, {}, {"value": [1, 2]}
    if kind == "self-link":  # every page names itself as the next one
        return 200, {}, {**page, "nextLink": f"https://127.0.0.1:{port}{raw_path}"}
    if kind == "loop":  # the last page leads back to the first
        first = urllib.parse.urlsplit(raw_path)
        query = {k: v[0] for k, v in urllib.parse.parse_qs(first.query).items() if k != "$skiptoken"}
        back = f"https://127.0.0.1:{port}{first.path}?{urllib.parse.urlencode(query)}"
        return 200, {}, {**page, "nextLink": page.get("nextLink") or back}
    if kind == "reset":
        return 0, {}, RESET
    raise AssertionError(kind)


def _viewed(items: list[dict[str, Any]], query: dict[str, list[str]]) -> list[dict[str, Any]]:
    """A VM list as ARM answers it: `statusOnly=true` gives each VM's id, name and instance view only (the run-time
    status, no profiles); `$expand=instanceView` the VMs with theirs; any other list the VMs without it."""
    if query.get("statusOnly") == ["true"]:
        return [
            {k: i[k] for k in ("id", "name", "type", "location") if k in i}
            | {"properties": {"instanceView": (i.get("properties") or {}).get("instanceView") or _RUNNING_VIEW}}
            for i in items
        ]
    if query.get("$expand") == ["instanceView"]:
        return items
    return [_without_view(i) for i in items]


def _without_view(item: dict[str, Any]) -> dict[str, Any]:
    props = item.get("properties")
    if not isinstance(props, dict) or "instanceView" not in props:
        return item
    return {**item, "properties": {k: v for k, v in props.items() if k != "instanceView"}}


_RUNNING_VIEW = {"statuses": [{"code": "PowerState/running", "level": "Info", "displayStatus": "VM running"}]}


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (cert.pem, key.pem)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@contextmanager
def serve(replay: ArmReplay, cert: Path, key: Path) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            status, headers, body = replay.respond(self.command, self.path)
            if body is RESET:  # close at once with SO_LINGER 0: the client reads a reset, not an answer
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
                return
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            if "Content-Type" not in headers:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    replay.port = server.server_address[1]

    def kill() -> None:  # the endpoint dies: no more answers, and new connections are refused
        server.shutdown()
        server.server_close()

    replay.kill = kill
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{replay.port}"
    finally:
        server.shutdown()
        server.server_close()


def fake_az(folder: Path) -> Path:
    """An `az` that prints a token for any arguments (AzureCliCredential's only need); returns its folder."""
    folder.mkdir(parents=True, exist_ok=True)
    token = {
        "accessToken": "fake",
        "expiresOn": "2099-01-01 00:00:00.000000",
        "expires_on": 4070908800,
        "subscription": "11111111-2222-3333-4444-555555555555",
        "tenant": "00000000-0000-0000-0000-000000000000",
        "tokenType": "Bearer",
    }
    script = folder / "az"
    # Each call's arguments are logged beside it, so tests can see which token audience was asked for.
    script.write_text(f"#!/bin/sh\necho \"$@\" >> {folder / 'az.log'}\ncat <<'EOF'\n{json.dumps(token)}\nEOF\n")
    script.chmod(0o755)
    return folder


def use_fake_az(folder: Path, certificate: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """AzureCliCredential only, the fake `az` (in `folder`/bin) first on PATH, and the test certificate (its PEM
    file) trusted (reference/testing.md); returns the variables set."""
    env = {
        "AZURE_TOKEN_CREDENTIALS": "AzureCliCredential",
        "PATH": f"{fake_az(folder / 'bin')}{os.pathsep}{os.environ['PATH']}",
        "REQUESTS_CA_BUNDLE": str(certificate),
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env
