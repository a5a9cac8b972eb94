"""A Kubernetes API server on 127.0.0.1 for the live `fabriccheck k8s` tests: it serves the objects of a dump folder
(tests' own fixtures, fixtures/k8s/) at the paths the API serves them, as the API does: List answers with
`metadata.continue` pages when a `limit` is given, per namespace or across all, 404 for a kind it does not hold as
a custom resource, and faults on request (a 403 on one namespace, 429 with Retry-After a number of times; a list
answered with a body that is not the list, a continue token that loops, a connection reset or an answer that stalls
past the client's read timeout). Every request is recorded, so a test can count the list calls and pages a run made.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from loopback import serving

from fabriccheck.providers.k8s.role import KINDS, resource_of

TOKEN = "fabriccheck-test-token"


@dataclass
class KubeReplay:
    objects: dict[str, list[dict[str, Any]]]  # by plural
    forbidden_namespaces: set[str] = field(default_factory=set)
    forbidden_kinds: set[str] = field(default_factory=set)
    throttle: dict[str, int] = field(default_factory=dict)  # plural -> 429 answers before the real one
    versions: dict[str, str] = field(default_factory=dict)  # plural -> the one version served (else the kind's own)
    retry_after: str = "1"  # the Retry-After of those 429s
    bodies: dict[str, Any] = field(default_factory=dict)  # plural -> what a 200 answer to its list holds instead
    looping: set[str] = field(default_factory=set)  # plurals whose every page says continue=again
    faults: dict[str, list[str]] = field(default_factory=dict)  # plural -> "reset" / "stall", one per request
    stall: float = 1.0  # seconds a stalled answer waits before it is sent
    requests: list[str] = field(default_factory=list)

    @classmethod
    def from_dump(cls, folder: Path, **kwargs: Any) -> KubeReplay:
        objects = {p.stem: json.loads(p.read_text())["items"] for p in sorted(folder.glob("*.json"))}
        return cls(objects, **kwargs)

    def answer(self, raw: str, authorization: str | None) -> tuple[int, Any, dict[str, str]]:
        self.requests.append(raw)
        if authorization != f"Bearer {TOKEN}":
            return 401, _status(401, "Unauthorized"), {}
        url = urlparse(raw)
        parts = url.path.strip("/").split("/")
        namespace = None
        if "namespaces" in parts:
            at = parts.index("namespaces")
            namespace = parts[at + 1]
            parts = parts[:at] + parts[at + 2 :]
        resource = parts[-1]
        group = "" if parts[0] == "api" else parts[1]
        kind = next((k for k in KINDS if resource_of(k) == resource and k.group == group), None)
        if kind is None:
            return 404, _status(404, "NotFound"), {}
        if kind.plural in self.forbidden_kinds or (namespace and namespace in self.forbidden_namespaces):
            return 403, _status(403, "Forbidden"), {}
        if self.faults.get(kind.plural):
            return 0, self.faults[kind.plural].pop(0), {}
        if self.throttle.get(kind.plural, 0) > 0:
            self.throttle[kind.plural] -= 1
            return 429, _status(429, "TooManyRequests"), {"Retry-After": self.retry_after}
        version = parts[1] if parts[0] == "api" else parts[2]
        if version != self.versions.get(kind.plural, kind.version):
            return 404, _status(404, "NotFound"), {}
        if kind.plural in self.bodies:
            return 200, self.bodies[kind.plural], {}
        if kind.plural not in self.objects:
            return (404, _status(404, "NotFound"), {}) if kind.group else (200, _list([], ""), {})
        items = [
            i for i in self.objects[kind.plural] if namespace is None or i["metadata"].get("namespace") == namespace
        ]
        query = parse_qs(url.query)
        limit = int(query.get("limit", ["0"])[0])
        if kind.plural in self.looping:
            return 200, _list(items[:limit] if limit else items, "again"), {}
        start = int(query.get("continue", ["0"])[0] or 0)
        if limit:
            page, rest = items[start : start + limit], items[start + limit :]
            return 200, _list(page, str(start + limit) if rest else ""), {}
        return 200, _list(items, ""), {}


def _list(items: list[dict[str, Any]], token: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": "1", "continue": token}}


def _status(code: int, reason: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code}


@contextmanager
def serve(replay: KubeReplay) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body, headers = replay.answer(self.path, self.headers.get("Authorization"))
            if body == "reset":  # the connection reset under the client (RST, not a clean close)
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
                self.close_connection = True
                return
            if body == "stall":  # past the client's read timeout, then the answer it no longer waits for
                time.sleep(replay.stall)
                status, body = 200, _list([], "")
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    with serving(Handler, daemon_threads=True) as url:
        yield url


def kubeconfig(path: Path, server: str, context: str = "eks-train") -> Path:
    """A kubeconfig naming `server` with the test token, its one context current."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": server}}],
        "users": [{"name": "tester", "user": {"token": TOKEN}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": "tester"}}],
        "current-context": context,
    }
    path.write_text(json.dumps(doc))
    return path
