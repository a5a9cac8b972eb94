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
from pathlib import Path
from typing import Any

import pytest
from loopback import serving

from fabriccheck.builders.demo_gcp import Project, build
from fabriccheck.builders.plan_builder import PlanBuilder, const, ref

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


def use_fake_google_key(folder: Path, monkeypatch: pytest.MonkeyPatch, project: str = "fabriccheck-demo") -> Path:
    """Application default credentials from a fake service-account key (written to `folder`/key.json), no gcloud
    configuration and no metadata server (reference/testing.md); returns the key's path."""
    key = folder / "key.json"
    key.write_text(json.dumps(fake_service_account_key(project)))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(folder / "gcloud"))
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    return key


# ------------------------------------------------ what the firewall policy tests share (global, hierarchical, regional)


def demo_project(drop_rules_of: str | None = None) -> Project:
    """The demo project (fabriccheck/builders/demo_gcp.build), the VPC firewall rules of network `drop_rules_of`
    removed, so that only the firewall policies a test adds can let its traffic in."""
    project = Project()
    build(project)
    if drop_rules_of:
        project.firewalls = [f for f in project.firewalls if not f["network"].endswith(f"/networks/{drop_rules_of}")]
    return project


def policy_rule(priority: int, action: str, ranges: list[str], ports: list[str] | None = None, **extra: Any) -> Any:
    """An ingress FirewallPolicyRule on TCP (every port, or `ports`) from `ranges`, as networkFirewallPolicies.get
    and getEffectiveFirewalls give it (https://cloud.google.com/compute/docs/reference/rest/v1/networkFirewallPolicies/get)."""
    layer4: dict[str, Any] = {"ipProtocol": "tcp", **({"ports": ports} if ports else {})}
    return {
        "kind": "compute#firewallPolicyRule",
        "priority": priority,
        "direction": "INGRESS",
        "action": action,
        "match": {"srcIpRanges": ranges, "layer4Configs": [layer4]},
        **extra,
    }


def predefined_rules(**extra: Any) -> list[dict[str, Any]]:
    """The lowest-priority goto_next ingress rules every firewall policy ends with, ::/0 at 2147483645 and
    0.0.0.0/0 at 2147483647 ("Predefined rules for firewall policies",
    https://cloud.google.com/firewall/docs/pre-defined-rules); `extra`: fields a describe answer adds to each."""
    return [
        {
            "kind": "compute#firewallPolicyRule",
            "priority": priority,
            "direction": "INGRESS",
            "action": "goto_next",
            "match": {"srcIpRanges": [source], "layer4Configs": [{"ipProtocol": "all"}]},
            **extra,
        }
        for priority, source in ((2147483645, "::/0"), (2147483647, "0.0.0.0/0"))
    ]


def gcp110_report(project: Project, folder: Path, extra_files: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """`fabriccheck gcp --from-dump --select GCP110 -f json` over the project's dump written to `folder`, with
    `extra_files` (dump file name -> its JSON) added; the exit code and the report."""
    from cli_run import run

    project.write(folder)
    for name, doc in extra_files.items():
        (folder / name).write_text(json.dumps(doc))
    result = run("gcp", "--from-dump", str(folder), "--select", "GCP110", "-f", "json")
    assert result.stdout, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, report


def cluster_of(report: dict[str, Any], name: str) -> dict[str, Any]:
    """The report's cluster whose id ends in /`name`."""
    found: dict[str, Any] = next(c for c in report["clusters"] if c["id"].endswith(f"/{name}"))
    return found


def plan_policy_rule(priority: int, action: str, ranges: list[str]) -> dict[str, Any]:
    """A firewall policy rule resource's values in a plan, every protocol from `ranges` (priority, action,
    direction, match { src_ip_ranges, layer4_configs { ip_protocol } }: registry.terraform.io/providers/hashicorp/
    google/latest/docs/resources/compute_network_firewall_policy_rule; compute_region_network_firewall_policy_rule
    and compute_firewall_policy_rule have the same schema)."""
    return {
        "priority": priority,
        "action": action,
        "direction": "INGRESS",
        "match": [{"src_ip_ranges": ranges, "layer4_configs": [{"ip_protocol": "all"}]}],
    }


A3_PLAN_NETWORKS = ["host", *(f"gpu-{i}" for i in range(4))]


def a3_plan(region: str | None = None) -> PlanBuilder:
    """The start of an A3 High Terraform plan in project proj (fabriccheck/builders/plan_builder.py): the host
    and four GPU networks, each but gpu-3 with a VPC firewall rule allowing all from 10.0.0.0/8 (gpu-3 is left to
    the firewall policies a test adds; google_compute_firewall, registry.terraform.io/providers/hashicorp/google/
    latest/docs/resources/compute_firewall). End it with `judge_a3_plan`."""
    plan = PlanBuilder()
    plan.region_settings["google"] = {"project": const("proj"), **({"region": const(region)} if region else {})}
    for net in A3_PLAN_NETWORKS:
        plan.resource("google_compute_network", net.replace("-", "_"), {"name": net, "mtu": 8244})
        if net != "gpu-3":
            plan.resource(
                "google_compute_firewall",
                net.replace("-", "_"),
                {"name": f"{net}-fw", "allow": [{"protocol": "all"}], "source_ranges": ["10.0.0.0/8"]},
                unknown={"network": True},
                expressions={"network": ref(f"google_compute_network.{net.replace('-', '_')}.name")},
            )
    return plan


def judge_a3_plan(plan: PlanBuilder, folder: Path, by_subnetwork: bool = False) -> Any:
    """The plan with its A3 High nodes added (an instance template with a GVNIC on each network, named by network
    or, `by_subnetwork`, by its google_compute_subnetwork as Cluster Toolkit writes them; a managed instance group of
    two), written to `folder` as `terraform show -json` writes it, and judged: the flow's report."""
    from fabriccheck import flow
    from fabriccheck.sources.terraform import load_plan

    nets = A3_PLAN_NETWORKS
    field, attribute = ("subnetwork", "self_link") if by_subnetwork else ("network", "name")
    plan.resource(
        "google_compute_instance_template",
        "a3",
        {
            "name": "a3-high",
            "machine_type": "a3-highgpu-8g",
            "network_interface": [{"nic_type": "GVNIC"} for _ in nets],
        },
        unknown={"self_link": True, "network_interface": [{field: True} for _ in nets]},
        expressions={
            "network_interface": [
                {field: ref(f"google_compute_{field}.{n.replace('-', '_')}.{attribute}")} for n in nets
            ]
        },
    )
    plan.resource(
        "google_compute_instance_group_manager",
        "a3",
        {"name": "a3", "zone": "us-central1-a", "target_size": 2, "version": [{"name": "v1"}]},
        unknown={"version": [{"instance_template": True}]},
        expressions={"version": [{"instance_template": ref("google_compute_instance_template.a3.self_link")}]},
    )
    path = folder / f"plan-{len(list(folder.iterdir()))}.json"
    path.write_text(json.dumps(plan.build()))
    return flow.run(load_plan(str(path)), flow.Options())
