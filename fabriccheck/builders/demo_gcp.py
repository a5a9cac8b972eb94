"""Rebuild the GCP demo project under fixtures/demo/gcp: what `gcloud compute ... list --format=json` prints for
a project with one correctly configured A3 High cluster and one misconfigured cluster per GCP rule category.

Every resource has the Compute Engine v1 API's JSON shape (kind, id, selfLink, full resource URLs), which is
what gcloud prints with --format=json; the collector tests serve the same items through a local Compute
endpoint, so the real google-cloud-compute client parses them (tests/test_gcp_collector.py).
Run: python tools/build_demo_gcp.py   (benchmarks/bench_gcp.py uses `fleet` to build large projects)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fabriccheck.builders import checkout

ROOT = checkout()

API = "https://www.googleapis.com/compute/v1"
PROJECT = "fabriccheck-demo"
PROJECT_NUMBER = "123456789012"
REGION = "us-central1"
ZONE = "us-central1-a"

Item = dict[str, Any]
# The GPUs an accelerator-optimized machine type comes with, as instances list them in guestAccelerators (accelerator
# type names: Google Cloud, GPU machine types).
GPUS = {
    "a3-highgpu-8g": ("nvidia-h100-80gb", 8),
    "a3-highgpu-2g": ("nvidia-h100-80gb", 2),
    "a3-megagpu-8g": ("nvidia-h100-mega-80gb", 8),
    "a3-ultragpu-8g": ("nvidia-h200-141gb", 8),
}


class Project:
    """The resources of one project, as gcloud lists them."""

    def __init__(self, name: str = PROJECT) -> None:
        self.name = name
        self.instances: list[Item] = []
        self.policies: list[Item] = []
        self.networks: list[Item] = []
        self.subnetworks: list[Item] = []
        self.firewalls: list[Item] = []
        # Global network firewall policies, as `gcloud compute network-firewall-policies list --format=json` prints
        # them (the demo's networks name none: an empty list, collected).
        self.firewall_policies: list[Item] = []
        self._ids = 1000

    def _id(self) -> str:
        self._ids += 1
        return str(7_000_000_000_000_000_000 + self._ids)

    def url(self, path: str) -> str:
        return f"{API}/projects/{self.name}/{path}"

    def network(
        self, name: str, mtu: int | None = 1460, profile_zone: str | None = None, cidr: str = "", profile: str = "roce"
    ) -> str:
        """A VPC network with one subnet; `profile_zone`: an RDMA network profile of that zone, of kind `profile`
        (roce for MRDMA NICs, falcon for H4D's IRDMA NICs)."""
        item: Item = {
            "kind": "compute#network",
            "id": self._id(),
            "creationTimestamp": "2026-10-01T08:00:00.000-07:00",
            "name": name,
            "selfLink": self.url(f"global/networks/{name}"),
            "selfLinkWithId": self.url(f"global/networks/{self._ids}"),
            "autoCreateSubnetworks": False,
            "routingConfig": {"routingMode": "REGIONAL", "bgpBestPathSelectionMode": "LEGACY"},
            "networkFirewallPolicyEnforcementOrder": "AFTER_CLASSIC_FIREWALL",
            "subnetworks": [self.url(f"regions/{REGION}/subnetworks/{name}-sub")],
        }
        if mtu is not None:
            item["mtu"] = mtu
        if profile_zone:
            item["networkProfile"] = self.url(f"global/networkProfiles/{profile_zone}-vpc-{profile}")
        self.networks.append(item)
        self.subnetworks.append(
            {
                "kind": "compute#subnetwork",
                "id": self._id(),
                "creationTimestamp": "2026-10-01T08:00:10.000-07:00",
                "name": f"{name}-sub",
                "network": self.url(f"global/networks/{name}"),
                "ipCidrRange": cidr or f"10.{len(self.networks)}.0.0/16",
                "gatewayAddress": (cidr or f"10.{len(self.networks)}.0.0/16").rsplit(".", 2)[0] + ".0.1",
                "region": self.url(f"regions/{REGION}"),
                "selfLink": self.url(f"regions/{REGION}/subnetworks/{name}-sub"),
                "privateIpGoogleAccess": False,
                "fingerprint": "fQ2dBEjRvG8=",
                "purpose": "PRIVATE",
                "stackType": "IPV4_ONLY",
            }
        )
        return name

    def firewall(self, network: str, name: str, rules: list[Item], sources: list[str]) -> None:
        self.firewalls.append(
            {
                "kind": "compute#firewall",
                "id": self._id(),
                "creationTimestamp": "2026-10-01T08:01:00.000-07:00",
                "name": name,
                "description": "",
                "network": self.url(f"global/networks/{network}"),
                "priority": 1000,
                "sourceRanges": sources,
                "allowed": rules,
                "direction": "INGRESS",
                "logConfig": {"enable": False},
                "disabled": False,
                "selfLink": self.url(f"global/firewalls/{name}"),
            }
        )

    def internal_firewall(self, network: str) -> None:
        """The rule Cluster Toolkit's modules/network/vpc creates (enable_internal_traffic; GoogleCloudPlatform/
        cluster-toolkit@0056cb4d329df2a33c6bf538b964026cafd67f2f:modules/network/vpc/main.tf) and Google's GPUDirect
        pages create with `--rules=tcp:0-65535,udp:0-65535,icmp`, as the API stores it: ports on tcp and udp."""
        cidr = next(s["ipCidrRange"] for s in self.subnetworks if s["network"].endswith(f"/networks/{network}"))
        rules: list[Item] = [
            {"IPProtocol": "tcp", "ports": ["0-65535"]},
            {"IPProtocol": "udp", "ports": ["0-65535"]},
            {"IPProtocol": "icmp"},
        ]
        self.firewall(network, f"{network}-allow-internal-traffic", rules, [cidr])

    def policy(self, name: str, collocation: str | None = "COLLOCATED", vm_count: int | None = None) -> str:
        item: Item = {
            "kind": "compute#resourcePolicy",
            "id": self._id(),
            "creationTimestamp": "2026-10-01T08:02:00.000-07:00",
            "selfLink": self.url(f"regions/{REGION}/resourcePolicies/{name}"),
            "region": self.url(f"regions/{REGION}"),
            "name": name,
            "status": "READY",
        }
        if collocation:
            item["groupPlacementPolicy"] = {"collocation": collocation, **({"vmCount": vm_count} if vm_count else {})}
        else:
            item["snapshotSchedulePolicy"] = {"schedule": {"dailySchedule": {"daysInCycle": 1, "startTime": "04:00"}}}
        self.policies.append(item)
        return name

    def instance(
        self,
        name: str,
        machine: str,
        nics: list[tuple[str, str]],
        labels: dict[str, str] | None = None,
        policies: list[str] = (),  # type: ignore[assignment]
        zone: str = ZONE,
        status: str = "RUNNING",
        mig: str | None = None,
        reservation: str | None = None,
        host: str | None = None,
        network_project: str | None = None,
        accelerators: list[Item] | None = None,
        regional_mig: bool = False,
        provisioning: str = "STANDARD",
    ) -> None:
        """`nics`: (network name, nicType) per NIC, nic0 first. `network_project`: the Shared VPC host project that
        owns the networks (their URLs name it), else this one."""
        region = zone.rsplit("-", 1)[0]
        interfaces = self._interfaces(nics, region, network_project or self.name)
        metadata_items = [{"key": "enable-oslogin", "value": "TRUE"}]
        if mig:
            group = f"regions/{region}" if regional_mig else f"zones/{zone}"
            value = f"projects/{PROJECT_NUMBER}/{group}/instanceGroupManagers/{mig}"
            metadata_items.append({"key": "created-by", "value": value})
        item: Item = {
            "kind": "compute#instance",
            "id": self._id(),
            "creationTimestamp": "2026-10-02T09:00:00.000-07:00",
            "name": name,
            "tags": {"fingerprint": "42WmSpB8rSM="},
            "machineType": self.url(f"zones/{zone}/machineTypes/{machine}"),
            "status": status,
            "zone": self.url(f"zones/{zone}"),
            "canIpForward": False,
            "networkInterfaces": interfaces,
            "disks": [boot_disk(self.url(f"zones/{zone}/disks/{name}"))],
            "metadata": {"kind": "compute#metadata", "fingerprint": "mdfp0000000=", "items": metadata_items},
            "selfLink": self.url(f"zones/{zone}/instances/{name}"),
            "scheduling": {
                "onHostMaintenance": "TERMINATE",
                "automaticRestart": True,
                "preemptible": False,
                "provisioningModel": provisioning,
            },
            "cpuPlatform": "Intel Sapphire Rapids",
            "labels": labels or {},
            "labelFingerprint": "lblfp000000=",
            "startRestricted": False,
            "deletionProtection": False,
            "resourcePolicies": [self.url(f"regions/{region}/resourcePolicies/{p}") for p in policies],
            "fingerprint": "instfp00000=",
            "lastStartTimestamp": "2026-10-02T09:01:00.000-07:00",
            "satisfiesPzi": True,
        }
        if reservation:
            item["reservationAffinity"] = {
                "consumeReservationType": "SPECIFIC_RESERVATION",
                "key": "compute.googleapis.com/reservation-name",
                "values": [reservation],
            }
        if host:
            item["resourceStatus"] = {"physicalHost": host}
        if accelerators is None and machine in GPUS:
            kind, count = GPUS[machine]
            accelerators = [
                {"acceleratorType": self.url(f"zones/{zone}/acceleratorTypes/{kind}"), "acceleratorCount": count}
            ]
        if accelerators:
            item["guestAccelerators"] = accelerators
        self.instances.append(item)

    def _interfaces(self, nics: list[tuple[str, str]], region: str, owner: str) -> list[Item]:
        """networkInterfaces[] on the networks of project `owner`, nic0 with an (empty) access config list."""
        base = f"{API}/projects/{owner}"
        interfaces = []
        for i, (network, nic_type) in enumerate(nics):
            nic: Item = {
                "kind": "compute#networkInterface",
                "network": f"{base}/global/networks/{network}",
                "subnetwork": f"{base}/regions/{region}/subnetworks/{network}-sub",
                "networkIP": f"10.{i + 1}.{len(self.instances) // 250}.{len(self.instances) % 250 + 2}",
                "name": f"nic{i}",
                "fingerprint": "a1b2c3d4e5f=",
                "stackType": "IPV4_ONLY",
                "nicType": nic_type,
            }
            if i == 0:
                nic["accessConfigs"] = []
            interfaces.append(nic)
        return interfaces

    def files(self) -> dict[str, list[Item]]:
        return {
            "instances-list.json": self.instances,
            "resource-policies-list.json": self.policies,
            "networks-list.json": self.networks,
            "networks-subnets-list.json": self.subnetworks,
            "firewall-rules-list.json": self.firewalls,
            "network-firewall-policies-list.json": self.firewall_policies,
        }

    def write(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name, items in self.files().items():
            (folder / name).write_text(json.dumps(items, indent=1) + "\n")


def boot_disk(source: str) -> Item:
    return {
        "kind": "compute#attachedDisk",
        "type": "PERSISTENT",
        "mode": "READ_WRITE",
        "source": source,
        "deviceName": "persistent-disk-0",
        "index": 0,
        "boot": True,
        "autoDelete": True,
        "interface": "NVME",
        "diskSizeGb": "200",
        "architecture": "X86_64",
    }


def gke(cluster: str, pool: str) -> dict[str, str]:
    return {"goog-k8s-cluster-name": cluster, "goog-k8s-node-pool-name": pool, "goog-gke-node": ""}


def slurm(cluster: str, nodeset: str, role: str = "compute") -> dict[str, str]:
    return {"slurm_cluster_name": cluster, "slurm_nodeset": nodeset, "slurm_instance_role": role}


def a3_high_nets(project: Project) -> list[str]:
    """The host VPC and 4 GPU VPCs of A3 High (MTU 8244, internal traffic allowed: CTK-A3H)."""
    if not any(n["name"] == "a3-host" for n in project.networks):
        project.network("a3-host", mtu=8244)
        project.firewall("a3-host", "a3-host-ssh", [{"IPProtocol": "tcp", "ports": ["22"]}], ["35.235.240.0/20"])
        for i in range(4):
            project.network(f"a3-gpu-{i}", mtu=8244, cidr=f"10.{100 + i}.0.0/16")
            project.internal_firewall(f"a3-gpu-{i}")
    return ["a3-host"] + [f"a3-gpu-{i}" for i in range(4)]


def a3_mega_nets(project: Project) -> list[str]:
    if not any(n["name"] == "a3m-host" for n in project.networks):
        project.network("a3m-host", mtu=8244)
        for i in range(8):
            project.network(f"a3m-gpu-{i}", mtu=8244, cidr=f"10.{120 + i}.0.0/16")
            project.internal_firewall(f"a3m-gpu-{i}")
    return ["a3m-host"] + [f"a3m-gpu-{i}" for i in range(8)]


def iap_ssh_policy(project: Project) -> Item:
    """A global network firewall policy no network is associated with (it governs nothing): IAP's TCP forwarding
    range on SSH, as `gcloud compute network-firewall-policies describe` prints it (FirewallPolicy with its rules
    and the predefined lowest-priority goto_next rule; https://cloud.google.com/compute/docs/reference/rest/v1/
    networkFirewallPolicies/get, https://cloud.google.com/firewall/docs/pre-defined-rules)."""
    return {
        "kind": "compute#firewallPolicy",
        "id": "4136870237186423810",  # fixed: the other resources' ids stay as they were
        "name": "ssh-from-iap",
        "selfLink": project.url("global/firewallPolicies/ssh-from-iap"),
        "rules": [
            {
                "kind": "compute#firewallPolicyRule",
                "priority": 1000,
                "direction": "INGRESS",
                "action": "allow",
                "match": {
                    "srcIpRanges": ["35.235.240.0/20"],
                    "layer4Configs": [{"ipProtocol": "tcp", "ports": ["22"]}],
                },
            },
            {
                "kind": "compute#firewallPolicyRule",
                "priority": 2147483647,
                "direction": "INGRESS",
                "action": "goto_next",
                "match": {"srcIpRanges": ["0.0.0.0/0"], "layer4Configs": [{"ipProtocol": "all"}]},
            },
        ],
    }


def build(project: Project) -> None:
    """One correct cluster and one per GCP rule category (each cluster's name says what it shows)."""
    host, *gpu = a3_high_nets(project)
    tcpx = [(host, "GVNIC")] + [(n, "GVNIC") for n in gpu]
    project.firewall_policies.append(iap_ssh_policy(project))

    # Correct: A3 High, 4 GPU NICs on 4 VPCs, one compact policy, GPU networks open internally, MTU 8244.
    project.policy("a3h-train-compact", vm_count=4)
    for i in range(4):
        project.instance(
            f"a3h-train-{i}",
            "a3-highgpu-8g",
            tcpx,
            gke("train", "a3-high"),
            ["a3h-train-compact"],
            host=f"/c0ffee/r{i // 2:02d}/h{i:03d}",
        )
    # fabric-missing: A3 High with only the host NIC.
    project.policy("a3h-hostonly-compact")
    for i in range(2):
        project.instance(
            f"a3h-hostonly-{i}", "a3-highgpu-8g", [(host, "GVNIC")], gke("train", "hostonly"), ["a3h-hostonly-compact"]
        )
    # fabric-partial: A3 Mega with 4 of its 8 GPU NICs.
    mega_host, *mega_gpu = a3_mega_nets(project)
    project.policy("a3m-half-compact")
    for i in range(2):
        nics = [(mega_host, "GVNIC")] + [(n, "GVNIC") for n in mega_gpu[:4]]
        project.instance(f"a3m-half-{i}", "a3-megagpu-8g", nics, slurm("hpc", "a3mhalf"), ["a3m-half-compact"])
    # network-config: A3 Mega with an extra storage gVNIC beyond host + 8 GPU NICs.
    project.network("storage", mtu=8244)
    project.internal_firewall("storage")
    project.policy("a3m-extra-compact")
    for i in range(2):
        nics = [(mega_host, "GVNIC")] + [(n, "GVNIC") for n in mega_gpu] + [("storage", "GVNIC")]
        project.instance(f"a3m-extra-{i}", "a3-megagpu-8g", nics, slurm("hpc", "a3mextra"), ["a3m-extra-compact"])
    # fabric-missing (RDMA): A3 Ultra whose GPU NICs are gVNIC on a regular VPC instead of MRDMA.
    project.network("a3u-host", mtu=8896)
    project.network("a3u-host2", mtu=8896)
    project.network("a3u-gpu", mtu=8896)
    for i in range(2):
        nics = [("a3u-host", "GVNIC"), ("a3u-host2", "GVNIC")] + [("a3u-gpu", "GVNIC")] * 8
        project.instance(
            f"a3u-gvnic-{i}", "a3-ultragpu-8g", nics, gke("infer", "ultra-gvnic"), reservation="a3u-future-1"
        )
    # fabric-isolated: A3 Ultra's MRDMA NICs on a RoCE VPC whose profile is another zone's.
    project.network("roce-b", mtu=8896, profile_zone="us-central1-b")
    for i in range(2):
        nics = [("a3u-host", "GVNIC"), ("a3u-host2", "GVNIC")] + [("roce-b", "MRDMA")] * 8
        project.instance(
            f"a3u-wrongzone-{i}", "a3-ultragpu-8g", nics, gke("train", "ultra-zone"), reservation="a3u-future-1"
        )
    # placement: a correct A3 High nodeset without any compact policy (only a snapshot schedule).
    project.policy("daily-snapshots", collocation=None)
    for i in range(3):
        project.instance(f"a3h-loose-{i}", "a3-highgpu-8g", tcpx, slurm("hpc", "a3loose"), ["daily-snapshots"])
    # instance-choice: a managed instance group of single-NIC a3-highgpu-2g.
    for i in range(4):
        project.instance(
            f"a3h-small-{i}", "a3-highgpu-2g", [(host, "GVNIC")], {"team": "research"}, mig="a3h-small-mig"
        )
    # Not judged: a Slurm controller, a stopped node and a CPU web server.
    project.network("default", mtu=None)
    project.instance("hpc-controller", "n2-standard-8", [("default", "VIRTIO_NET")], slurm("hpc", "", "controller"))
    project.instance("a3h-stopped", "a3-highgpu-8g", tcpx, {}, status="TERMINATED")
    project.instance("web-0", "e2-standard-4", [("default", "VIRTIO_NET")], {"app": "web"})


def fleet(instances: int, project: str = PROJECT) -> Project:
    """A large project for benchmarks: A3 High clusters of 16 in GKE node pools, each with its policy."""
    built = Project(project)
    host, *gpu = a3_high_nets(built)
    tcpx = [(host, "GVNIC")] + [(n, "GVNIC") for n in gpu]
    for i in range(instances):
        pool = f"pool-{i // 16}"
        if i % 16 == 0:
            built.policy(f"{pool}-compact", vm_count=16)
        built.instance(
            f"node-{i:05d}", "a3-highgpu-8g", tcpx if i % 7 else tcpx[:3], gke("big", pool), [f"{pool}-compact"]
        )
    return built


def main() -> None:
    project = Project()
    build(project)
    out = ROOT / "fixtures" / "demo" / "gcp"
    project.write(out)
    print(f"wrote {len(project.instances)} instances to {out}")
