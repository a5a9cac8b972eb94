"""A local Compute Engine endpoint (127.0.0.1 only) that serves recorded Compute API JSON over the real REST paths.

The real google-cloud-compute clients talk to it through `ClientOptions(api_endpoint="http://127.0.0.1:PORT")`
(reference/testing.md). It answers list and aggregated-list requests from per-project resource lists (the same
items `gcloud compute ... list --format=json` prints), pages them by maxResults / pageToken, groups aggregated
answers by zone or region scope (with a NO_RESULTS_ON_PAGE warning scope, as the API sends), and can answer
a project with a Google JSON error (403, 404, 429). Every request is recorded (method, path, query) for call
counting and the read-only proof.

Faults (issue 18), each keyed by (project, resource): `bodies` answers 200 with a body that is not the list (`{}`,
an HTML page), `looping` gives page 1 a nextPageToken that leads back to page 0 forever, and `resets` resets the
connection (TCP RST, no answer) that many times (-1: always) before serving.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback import serving

KIND = {
    "instances": "compute#instanceAggregatedList",
    "resourcePolicies": "compute#resourcePolicyAggregatedList",
    "subnetworks": "compute#subnetworkAggregatedList",
}
LIST_KIND = {
    "instances": "compute#instanceList",
    "resourcePolicies": "compute#resourcePolicyList",
    "subnetworks": "compute#subnetworkList",
    "networks": "compute#networkList",
    "firewalls": "compute#firewallList",
    # networkFirewallPolicies.list: GET .../projects/P/global/firewallPolicies answers a compute#firewallPolicyList
    # (https://cloud.google.com/compute/docs/reference/rest/v1/networkFirewallPolicies/list).
    "networkFirewallPolicies": "compute#firewallPolicyList",
}
# Collections whose REST path segment is not their API name: networkFirewallPolicies.list is
# GET .../projects/P/global/firewallPolicies (https://cloud.google.com/compute/docs/reference/rest/v1/networkFirewallPolicies/list).
RESOURCE_OF_PATH = {"firewallPolicies": "networkFirewallPolicies", "getEffectiveFirewalls": "effectiveFirewalls"}


def resource_of(segment: str) -> str:
    """The API collection a request path's last segment names."""
    return RESOURCE_OF_PATH.get(segment, segment)
FILES = {
    "instances": "instances-list.json",
    "resourcePolicies": "resource-policies-list.json",
    "networks": "networks-list.json",
    "subnetworks": "networks-subnets-list.json",
    "firewalls": "firewall-rules-list.json",
    "networkFirewallPolicies": "network-firewall-policies-list.json",
}
REASONS = {403: "forbidden", 404: "notFound", 429: "rateLimitExceeded", 500: "backendError", 503: "backendError"}


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]


@dataclass
class ComputeReplay:
    projects: dict[str, dict[str, list[dict[str, Any]]]]  # project -> resource -> items
    page_size: int | None = None  # smaller pages than the client asks for, to exercise paging
    failures: dict[tuple[str, str], int] = field(default_factory=dict)  # (project, resource or "*") -> status
    failures_once: dict[tuple[str, str], int] = field(default_factory=dict)  # answered once, then served
    empty_scopes: tuple[str, ...] = ("zones/us-east1-b", "regions/europe-west4")
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Resource Manager v3: parent ("organizations/1", "folders/2") -> its projects / folders, as the API lists them.
    rm_projects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    rm_folders: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    rm_denied: set[str] = field(default_factory=set)  # parents whose listing answers 403
    bodies: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # -> (content type, body) with 200
    looping: set[tuple[str, str]] = field(default_factory=set)  # page 1's nextPageToken leads back to page 0
    resets: dict[tuple[str, str], int] = field(default_factory=dict)  # connection resets left (-1: always)
    # regionNetworkFirewallPolicies.getEffectiveFirewalls: GET .../projects/P/regions/R/firewallPolicies/
    # getEffectiveFirewalls?network=URL answers {"firewalls": [...], "firewallPolicys": [...]} (no kind; Compute API
    # v1 RegionNetworkFirewallPoliciesGetEffectiveFirewallsResponse), keyed by (project, region, network name).
    effective: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)

    def reset_now(self, raw_path: str) -> bool:
        """Whether this request's connection is reset instead of answered (counted down per (project, resource))."""
        parts = urllib.parse.urlsplit(raw_path).path.strip("/").split("/")
        key = (parts[3], resource_of(parts[-1])) if len(parts) >= 6 else ("", "")
        with self.lock:
            left = self.resets.get(key, 0)
            if left == 0:
                return False
            self.requests.append(Request("GET", urllib.parse.urlsplit(raw_path).path, {"reset": "1"}))
            if left > 0:
                self.resets[key] = left - 1
            return True

    @classmethod
    def from_files(cls, projects: dict[str, dict[str, list[dict[str, Any]]]], **kwargs: Any) -> ComputeReplay:
        """`projects`: project -> {dump file name: items}, as builders/demo_gcp.Project.files() gives them."""
        by_resource = {
            project: {resource: files.get(name, []) for resource, name in FILES.items()}
            for project, files in projects.items()
        }
        return cls(by_resource, **kwargs)

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def answer(self, method: str, raw_path: str) -> tuple[int, dict[str, Any]]:
        parsed = urllib.parse.urlsplit(raw_path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        with self.lock:
            self.requests.append(Request(method, parsed.path, query))
        if method != "GET":
            return 405, _error(405, f"{method} is not served here", "badRequest")
        if parsed.path in ("/v3/projects", "/v3/folders"):
            return self._resource_manager(parsed.path.rsplit("/", 1)[1], query)
        parts = parsed.path.strip("/").split("/")
        if parts[:3] != ["compute", "v1", "projects"] or len(parts) < 6:
            return 404, _error(404, f"no such path {parsed.path}", "notFound")
        project, resource = parts[3], resource_of(parts[-1])
        for key in ((project, resource), (project, "*")):
            with self.lock:
                once = self.failures_once.pop(key, None)
            status = once or self.failures.get(key)
            if status:
                return status, _error(status, _message(status, project, resource), REASONS.get(status, "error"))
        if (project, resource) in self.bodies:
            return 200, {"__raw__": self.bodies[(project, resource)]}
        if project not in self.projects:
            return 404, _error(404, f"The resource 'projects/{project}' was not found", "notFound")
        if resource == "effectiveFirewalls":
            network = query.get("network", "").rsplit("/", 1)[-1]
            return 200, self.effective.get((project, parts[5], network), {"firewalls": [], "firewallPolicys": []})
        items = self.projects[project].get(resource, [])
        where = parts[4]
        if where == "zones":
            items = [i for i in items if str(i.get("zone", "")).endswith(f"/zones/{parts[5]}")]
        elif where == "regions":
            items = [i for i in items if str(i.get("region", "")).endswith(f"/regions/{parts[5]}")]
        size = int(query.get("maxResults", 500))
        if self.page_size:
            size = min(size, self.page_size)
        start = int(query.get("pageToken") or 0)
        page = items[start : start + size]
        body: dict[str, Any] = {
            "id": f"projects/{project}/{'/'.join(parts[4:])}",
            "selfLink": f"https://www.googleapis.com/compute/v1/projects/{project}/{'/'.join(parts[4:])}",
        }
        if start + size < len(items):
            body["nextPageToken"] = str(start + size)
        elif (project, resource) in self.looping and start > 0:
            body["nextPageToken"] = "0"  # back to the first page: a pager that trusts it never ends
        if where == "aggregated":
            body["kind"] = KIND[resource]
            scoped: dict[str, dict[str, Any]] = {}
            if start == 0:
                for scope in self.empty_scopes:
                    scoped[scope] = {
                        "warning": {
                            "code": "NO_RESULTS_ON_PAGE",
                            "message": f"There are no results for scope '{scope}' on this page.",
                            "data": [{"key": "scope", "value": scope}],
                        }
                    }
            for item in page:
                scope = (
                    f"zones/{str(item['zone']).rsplit('/', 1)[-1]}"
                    if "zone" in item
                    else f"regions/{str(item['region']).rsplit('/', 1)[-1]}"
                )
                scoped.setdefault(scope, {resource: []}).setdefault(resource, []).append(item)
            body["items"] = scoped
        else:
            body["kind"] = LIST_KIND[resource]
            body["items"] = page
        return 200, body

    def _resource_manager(self, kind: str, query: dict[str, str]) -> tuple[int, dict[str, Any]]:
        parent = query.get("parent", "")
        if parent in self.rm_denied:
            return 403, _error(403, f"The caller does not have permission resourcemanager.{kind}.list", "forbidden")
        items = (self.rm_projects if kind == "projects" else self.rm_folders).get(parent, [])
        return 200, {kind: items}


def rm_project(project_id: str, parent: str, state: str = "ACTIVE") -> dict[str, Any]:
    return {"name": f"projects/{abs(hash(project_id)) % 10**12}", "projectId": project_id, "parent": parent,
            "state": state, "displayName": project_id}  # fmt: skip


def rm_folder(folder_id: str, parent: str, state: str = "ACTIVE") -> dict[str, Any]:
    return {"name": f"folders/{folder_id}", "parent": parent, "state": state, "displayName": f"folder {folder_id}"}


def _message(status: int, project: str, resource: str) -> str:
    if status == 403 and resource == "effectiveFirewalls":
        return f"Required 'compute.networks.getRegionEffectiveFirewalls' permission for 'projects/{project}'"
    if status == 403:  # the permission follows the REST path: .../global/firewallPolicies is compute.firewallPolicies
        permission = "firewallPolicies" if resource == "networkFirewallPolicies" else resource
        return f"Required 'compute.{permission}.list' permission for 'projects/{project}'"
    if status == 404:
        return f"The resource 'projects/{project}' was not found"
    if status == 429:
        return f"Quota exceeded for quota metric 'Read requests' of service 'compute.googleapis.com' for {project}"
    return "Internal error. Please try again or contact Google Support."


def _error(code: int, message: str, reason: str) -> dict[str, Any]:
    detail = {"message": message, "domain": "global", "reason": reason}
    return {"error": {"code": code, "message": message, "errors": [detail]}}


@contextmanager
def serve(replay: ComputeReplay) -> Iterator[str]:
    """Serve `replay` on 127.0.0.1; yields the endpoint URL (http://127.0.0.1:PORT)."""

    class Handler(BaseHTTPRequestHandler):
        def _reply(self) -> None:
            if replay.reset_now(self.path):
                # SO_LINGER 0: closing sends a TCP RST, which the client reads as "connection reset by peer".
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
                self.close_connection = True
                return
            status, body = replay.answer(self.command, self.path)
            content_type = "application/json; charset=UTF-8"
            if "__raw__" in body:
                content_type, raw = body["__raw__"]
                data = raw.encode()
            else:
                data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _reply

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def finish(self) -> None:
            with contextlib.suppress(OSError, ValueError):  # a connection reset on purpose is closed already
                super().finish()

    with serving(Handler) as url:
        yield url


def fake_service_account_key(project: str = "fabriccheck-demo") -> dict[str, str]:
    """A service-account key file's content with a freshly generated RSA key: google-auth signs its own JWT
    with it, so no token endpoint is called (reference/testing.md)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return {
        "type": "service_account",
        "project_id": project,
        "private_key_id": "0123456789abcdef0123456789abcdef01234567",
        "private_key": pem,
        "client_email": f"fabriccheck-test@{project}.iam.gserviceaccount.com",
        "client_id": "100000000000000000001",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": "https://oauth2.googleapis.com/token",
        "universe_domain": "googleapis.com",
    }
