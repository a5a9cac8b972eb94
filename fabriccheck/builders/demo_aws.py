"""Rebuild the demo account under fixtures/demo/aws: what `aws ec2 describe-* --output json` would print for
an account with one correctly configured EFA cluster and one misconfigured cluster per AWS rule category.

Instance-type answers are copied from the recorded DescribeInstanceTypes data moto ships, so they are the
real API's. Every file passes botocore's response validation against the EC2 model (tests/test_fixtures.py).
Run: python tools/build_demo.py   (also used by benchmarks/ to build large fleets)
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fabriccheck.builders import checkout

ROOT = checkout()
ACCOUNT = "111122223333"
VPC = "vpc-0a1b2c3d4e5f60001"
SUBNETS = {
    "subnet-0a00000000000000a": ("us-east-1a", False),
    "subnet-0a00000000000000c": ("us-east-1a", False),
    "subnet-0b00000000000000b": ("us-east-1b", False),
    "subnet-0a000000000000pub": ("us-east-1a", True),
}
SG_EFA = "sg-0e0000000000000ef"
SG_OPEN_EGRESS = "sg-0e00000000000bad0"
SG_WEB = "sg-0e0000000000000eb"

Nics = list[dict[str, Any]]
"""The NetworkInterfaces of one instance or launch template, as describe-* prints them."""


def recorded_instance_types(names: set[str]) -> list[dict[str, Any]]:
    import moto

    path = os.path.join(os.path.dirname(moto.__file__), "ec2/resources/instance_types.json.gz")
    with gzip.open(path) as raw:
        recorded = json.load(raw)
    return [recorded[n] for n in sorted(names)]


class Account:
    def __init__(self) -> None:
        self.reservations: list[dict[str, Any]] = []
        self.counter = 0

    def _id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}-{self.counter:017x}"

    def nic(
        self, card: int, device: int, kind: str, subnet: str, groups: list[str], public_ip: bool = False
    ) -> dict[str, Any]:
        eni = self._id("eni")
        ip = f"10.0.{self.counter // 250}.{self.counter % 250 + 4}"
        nic: dict[str, Any] = {
            "Attachment": {
                "AttachTime": "2026-11-20T08:00:00+00:00",
                "AttachmentId": self._id("eni-attach"),
                "DeleteOnTermination": True,
                "DeviceIndex": device,
                "Status": "attached",
                "NetworkCardIndex": card,
            },
            "Description": "",
            "Groups": [{"GroupId": g, "GroupName": g} for g in groups],
            "Operator": {"Managed": False},
            "Ipv6Addresses": [],
            "MacAddress": "0a:00:00:00:00:01",
            "NetworkInterfaceId": eni,
            "OwnerId": ACCOUNT,
            "SourceDestCheck": True,
            "Status": "in-use",
            "SubnetId": subnet,
            "VpcId": VPC,
            "InterfaceType": kind,
        }
        if kind != "efa-only":  # EFA-only interfaces get no IP address
            dns = f"ip-{ip.replace('.', '-')}.ec2.internal"
            nic["PrivateDnsName"] = dns
            nic["PrivateIpAddress"] = ip
            nic["PrivateIpAddresses"] = [{"Primary": True, "PrivateDnsName": dns, "PrivateIpAddress": ip}]
        if public_ip:
            nic["Association"] = {"IpOwnerId": "amazon", "PublicDnsName": "", "PublicIp": "203.0.113.10"}
        return nic

    def efa_layout(self, efa_count: int, subnet: str, groups: list[str]) -> list[dict[str, Any]]:
        """AWS's current recommended layout: ENA primary on card 0, EFA-only at (card 0, device 1) and at
        device 0 of every other card: one EFA device per network card."""
        nics = [self.nic(0, 0, "interface", subnet, groups)]
        if efa_count:
            nics.append(self.nic(0, 1, "efa-only", subnet, groups))
        nics += [self.nic(card, 0, "efa-only", subnet, groups) for card in range(1, efa_count)]
        return nics

    def instances(
        self,
        count: int,
        instance_type: str,
        *,
        zone: str = "us-east-1a",
        subnet: str = "subnet-0a00000000000000a",
        nics: Nics | Callable[[], Nics] | None = None,
        placement_group: str = "",
        tags: dict[str, str] | None = None,
        capacity_block: str | None = None,
        reservation: str | None = None,
        state: str = "running",
    ) -> list[str]:
        made: list[str] = []
        items: list[dict[str, Any]] = []
        for _ in range(count):
            instance_id = self._id("i")
            interfaces = nics() if callable(nics) else (nics or [self.nic(0, 0, "interface", subnet, [SG_WEB])])
            item = self._instance(
                instance_id, instance_type, interfaces, len(made), zone, subnet, placement_group, tags or {}, state
            )
            if reservation:
                item["CapacityReservationId"] = reservation
            if capacity_block:
                item["CapacityBlockId"] = capacity_block
            items.append(item)
            made.append(instance_id)
        self.reservations.append({"Groups": [], "Instances": items, "OwnerId": ACCOUNT, "ReservationId": self._id("r")})
        return made

    def _instance(
        self,
        instance_id: str,
        instance_type: str,
        interfaces: Nics,
        index: int,
        zone: str,
        subnet: str,
        placement_group: str,
        tags: dict[str, str],
        state: str,
    ) -> dict[str, Any]:
        """One instance of a reservation, as describe-instances prints it (`index`: its place in the reservation)."""
        return {
            "AmiLaunchIndex": 0,
            "ImageId": "ami-0123456789abcdef0",
            "InstanceId": instance_id,
            "InstanceType": instance_type,
            "LaunchTime": "2026-11-20T08:00:00+00:00",
            "Monitoring": {"State": "disabled"},
            "Placement": {"AvailabilityZone": zone, "GroupName": placement_group, "Tenancy": "default"},
            "PrivateDnsName": f"ip-10-0-0-{index + 4}.ec2.internal",
            "PrivateIpAddress": interfaces[0].get("PrivateIpAddress", "10.0.0.4"),
            "ProductCodes": [],
            "PublicDnsName": "",
            "State": {"Code": 16 if state == "running" else 80, "Name": state},
            "StateTransitionReason": "",
            "SubnetId": subnet,
            "VpcId": VPC,
            "Architecture": "x86_64",
            "EbsOptimized": True,
            "EnaSupport": True,
            "Hypervisor": "xen",
            "NetworkInterfaces": interfaces,
            "RootDeviceName": "/dev/sda1",
            "RootDeviceType": "ebs",
            "SecurityGroups": [{"GroupId": g["GroupId"], "GroupName": g["GroupName"]} for g in interfaces[0]["Groups"]],
            "SourceDestCheck": True,
            "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
            "VirtualizationType": "hvm",
            "PlatformDetails": "Linux/UNIX",
            "UsageOperation": "RunInstances",
            "UsageOperationUpdateTime": "2026-11-20T08:00:00+00:00",
            "BlockDeviceMappings": [
                {
                    "DeviceName": "/dev/sda1",
                    "Ebs": {
                        "AttachTime": "2026-11-20T08:00:01+00:00",
                        "DeleteOnTermination": True,
                        "Status": "attached",
                        "VolumeId": self._id("vol"),
                    },
                }
            ],
            "ClientToken": self._id("token"),
            **_launch_options(),
        }


def _launch_options() -> dict[str, Any]:
    """The settings every demo instance launched with (CPU, metadata service, boot), a fresh copy each."""
    return {
        "CpuOptions": {"CoreCount": 48, "ThreadsPerCore": 2},
        "CapacityReservationSpecification": {"CapacityReservationPreference": "open"},
        "HibernationOptions": {"Configured": False},
        "MetadataOptions": {
            "State": "applied",
            "HttpTokens": "required",
            "HttpPutResponseHopLimit": 2,
            "HttpEndpoint": "enabled",
            "HttpProtocolIpv6": "disabled",
            "InstanceMetadataTags": "disabled",
        },
        "EnclaveOptions": {"Enabled": False},
        "BootMode": "uefi-preferred",
        "PrivateDnsNameOptions": {
            "HostnameType": "ip-name",
            "EnableResourceNameDnsARecord": False,
            "EnableResourceNameDnsAAAARecord": False,
        },
        "MaintenanceOptions": {"AutoRecovery": "default", "RebootMigration": "default"},
        "CurrentInstanceBootMode": "uefi",
        "Operator": {"Managed": False},
    }


def _permission(
    protocol: str, pairs: list[dict[str, str]], ranges: list[dict[str, str]], ports: tuple[int, int] | None = None
) -> dict[str, Any]:
    """One IpPermissions entry: a protocol (and port range) to or from other groups and address ranges."""
    permission: dict[str, Any] = {"IpProtocol": protocol}
    if ports:
        permission |= {"FromPort": ports[0], "ToPort": ports[1]}
    return permission | {"UserIdGroupPairs": pairs, "IpRanges": ranges, "Ipv6Ranges": [], "PrefixListIds": []}


def _group(
    description: str, name: str, group_id: str, ingress: list[dict[str, Any]], egress: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "Description": description,
        "GroupName": name,
        "GroupId": group_id,
        "OwnerId": ACCOUNT,
        "VpcId": VPC,
        "IpPermissions": ingress,
        "IpPermissionsEgress": egress,
    }


def security_groups() -> dict[str, Any]:
    def pair(group: str) -> list[dict[str, str]]:
        return [{"GroupId": group, "UserId": ACCOUNT}]

    everywhere = [{"CidrIp": "0.0.0.0/0"}]
    return {
        "SecurityGroups": [
            _group(
                "EFA: all traffic with itself",
                "efa",
                SG_EFA,
                [_permission("-1", pair(SG_EFA), [])],
                [_permission("-1", pair(SG_EFA), []), _permission("-1", [], everywhere)],
            ),
            _group(
                "self ingress only; egress to anywhere",
                "efa-open-egress",
                SG_OPEN_EGRESS,
                [_permission("-1", pair(SG_OPEN_EGRESS), [])],
                [_permission("-1", [], everywhere)],
            ),
            _group(
                "web",
                "web",
                SG_WEB,
                [_permission("tcp", [], everywhere, ports=(443, 443))],
                [_permission("-1", [], everywhere)],
            ),
        ]
    }


def subnets() -> dict[str, Any]:
    return {
        "Subnets": [
            {
                "AvailabilityZone": zone,
                "AvailabilityZoneId": "use1-az" + zone[-1],
                "AvailableIpAddressCount": 4000,
                "CidrBlock": f"10.0.{i * 16}.0/20",
                "DefaultForAz": False,
                "MapPublicIpOnLaunch": public,
                "State": "available",
                "SubnetId": subnet,
                "VpcId": VPC,
                "OwnerId": ACCOUNT,
                "AssignIpv6AddressOnCreation": False,
                "Ipv6CidrBlockAssociationSet": [],
                "SubnetArn": f"arn:aws:ec2:us-east-1:{ACCOUNT}:subnet/{subnet}",
            }
            for i, (subnet, (zone, public)) in enumerate(SUBNETS.items())
        ]
    }


def placement_groups(groups: dict[str, str]) -> dict[str, Any]:
    return {
        "PlacementGroups": [
            {
                "GroupName": name,
                "State": "available",
                "Strategy": strategy,
                "GroupId": f"pg-{i:017x}",
                "GroupArn": f"arn:aws:ec2:us-east-1:{ACCOUNT}:placement-group/{name}",
                "Tags": [],
            }
            | ({"PartitionCount": 3} if strategy == "partition" else {})
            | ({"SpreadLevel": "rack"} if strategy == "spread" else {})
            for i, (name, strategy) in enumerate(groups.items())
        ]
    }


def template_version(
    lt_id: str,
    name: str,
    version: int,
    instance_type: str,
    nics: list[dict[str, Any]],
    default: bool,
    placement_group: str | None = None,
) -> dict[str, Any]:
    data: dict[str, Any] = {"InstanceType": instance_type, "ImageId": "ami-0123456789abcdef0"}
    if nics:
        data["NetworkInterfaces"] = nics
    if placement_group:
        data["Placement"] = {"GroupName": placement_group}
    return {
        "LaunchTemplateId": lt_id,
        "LaunchTemplateName": name,
        "VersionNumber": version,
        "CreateTime": "2026-11-01T10:00:00+00:00",
        "CreatedBy": f"arn:aws:iam::{ACCOUNT}:user/platform",
        "DefaultVersion": default,
        "LaunchTemplateData": data,
    }


def template_nics(efa: int, extra_plain: int = 0, public_first: bool = False) -> list[dict[str, Any]]:
    nics: list[dict[str, Any]] = [
        {
            "NetworkCardIndex": 0,
            "DeviceIndex": 0,
            "InterfaceType": "efa" if efa else "interface",
            "Groups": [SG_EFA],
            "SubnetId": "subnet-0a00000000000000a",
        }
    ]
    if public_first:
        nics[0]["AssociatePublicIpAddress"] = True
    nics += [
        {"NetworkCardIndex": c, "DeviceIndex": 0, "InterfaceType": "efa-only", "Groups": [SG_EFA]}
        for c in range(1, efa)
    ]
    nics += [{"NetworkCardIndex": 0, "DeviceIndex": 1 + i, "Groups": [SG_EFA]} for i in range(extra_plain)]
    return nics


def write(folder: Path, answers: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, answer in answers.items():
        (folder / name).write_text(json.dumps(answer, indent=4) + "\n")


def _efa(a: Account, n: int, sg: str = SG_EFA, subnet: str = "subnet-0a00000000000000a") -> Callable[[], Nics]:
    # A factory, so every instance gets its own interfaces (and interface ids).
    return lambda: a.efa_layout(n, subnet, [sg])


def _asg(name: str) -> dict[str, str]:
    return {"aws:autoscaling:groupName": name, "Name": name}


def _fabric_clusters(a: Account) -> list[str]:
    """The healthy cluster and one per fabric rule (missing, partial, isolated by group, zones, families); returns
    the healthy cluster's instances."""
    # 1. The healthy one: 4 x p5.48xlarge, all 32 EFAs, self-referencing SG, one cluster placement group.
    prod = a.instances(4, "p5.48xlarge", nics=_efa(a, 32), placement_group="pg-llm-prod", tags=_asg("llm-prod"))
    # 2. fabric-missing + placement: p4d nodes launched with only the primary ENA and no placement group.
    a.instances(2, "p4d.24xlarge", tags=_asg("vision-train"))
    # 3. fabric-partial: an EKS node group whose nodes got one EFA each (the public-IP workaround).
    a.instances(
        4,
        "p5.48xlarge",
        nics=lambda: [a.nic(0, 0, "efa", "subnet-0a00000000000000a", [SG_EFA])],
        placement_group="pg-llm-exp",
        tags={"eks:cluster-name": "research", "eks:nodegroup-name": "llm-exp"},
    )
    # 4. fabric-isolated (security group): self ingress, but egress only to 0.0.0.0/0.
    a.instances(2, "p4d.24xlarge", nics=_efa(a, 4, SG_OPEN_EGRESS), placement_group="pg-bert", tags=_asg("bert-ft"))
    # 5. fabric-isolated (zones): a ParallelCluster queue spread over two zones.
    pc = {
        "parallelcluster:cluster-name": "hpc-demo",
        "parallelcluster:queue-name": "gpu",
        "parallelcluster:node-type": "Compute",
    }
    a.instances(2, "p5.48xlarge", nics=_efa(a, 32), placement_group="pg-research", tags=pc)
    a.instances(
        1,
        "p5.48xlarge",
        zone="us-east-1b",
        subnet="subnet-0b00000000000000b",
        nics=_efa(a, 32, subnet="subnet-0b00000000000000b"),
        tags=pc,
    )
    a.instances(1, "c5.large", tags={**pc, "parallelcluster:node-type": "HeadNode"})
    # 6. fabric-isolated (families): a Karpenter node pool mixing p4d and p5.
    kp = {"karpenter.sh/nodepool": "mixed-gpu"}
    a.instances(1, "p4d.24xlarge", nics=_efa(a, 4), placement_group="pg-mixed", tags=kp)
    a.instances(1, "p5.48xlarge", nics=_efa(a, 32), placement_group="pg-mixed", tags=kp)
    return prod


def _other_clusters(a: Account) -> list[str]:
    """A spread placement group, subnets split in one zone, a type without EFA, a Capacity Block and the instances
    that are no training cluster; returns the Capacity Block's instances."""
    # 7. placement: p5e nodes in a spread placement group.
    a.instances(
        2,
        "p5e.48xlarge",
        nics=_efa(a, 32),
        placement_group="pg-spread",
        tags={"eks:cluster-name": "research", "eks:nodegroup-name": "h200"},
    )
    # 8. fabric-isolated warning: Trainium nodes with EFAs in two subnets of one zone.
    a.instances(1, "trn1.32xlarge", nics=_efa(a, 8), placement_group="pg-trn", tags=_asg("trn"))
    a.instances(
        1,
        "trn1.32xlarge",
        subnet="subnet-0a00000000000000c",
        nics=_efa(a, 8, subnet="subnet-0a00000000000000c"),
        placement_group="pg-trn",
        tags=_asg("trn"),
    )
    # 9. instance-choice: multi-node training on g5.4xlarge, which has no EFA (g5.8xlarge and up do).
    a.instances(4, "g5.4xlarge", tags=_asg("legacy-g5"))
    # 10. A Capacity Block: no placement group needed. Topology shows two top-layer nodes (info).
    block = a.instances(
        2, "p5.48xlarge", nics=_efa(a, 32), reservation="cr-0cb000000000000b1", capacity_block="cb-0cb000000000000b1"
    )
    # 11. Not training clusters: a dev box alone, a web fleet, EFA-capable CPU nodes, a terminated node.
    a.instances(1, "p5.48xlarge", tags={"Name": "dev-box"})
    a.instances(3, "c5.large", tags=_asg("web"))
    a.instances(2, "c5n.18xlarge", tags=_asg("etl"))
    a.instances(1, "p4d.24xlarge", tags=_asg("vision-train"), state="terminated")
    return block


def _instance_topology(prod: list[str], block: list[str]) -> dict[str, Any]:
    """describe-instance-topology: the healthy cluster under one spine, the Capacity Block's two under two."""
    return {
        "Instances": [
            {
                "InstanceId": iid,
                "InstanceType": "p5.48xlarge",
                "GroupName": "pg-llm-prod",
                "NetworkNodes": ["nn-top-0001", "nn-mid-0011", f"nn-bot-01{i}"],
                "AvailabilityZone": "us-east-1a",
                "ZoneId": "use1-az1",
            }
            for i, iid in enumerate(prod)
        ]
        + [
            {
                "InstanceId": iid,
                "InstanceType": "p5.48xlarge",
                "NetworkNodes": [f"nn-top-000{i + 2}", f"nn-mid-002{i}", f"nn-bot-02{i}"],
                "AvailabilityZone": "us-east-1a",
                "ZoneId": "use1-az1",
                "CapacityBlockId": "cb-0cb000000000000b1",
            }
            for i, iid in enumerate(block)
        ]
    }


def _launch_template_versions() -> dict[str, Any]:
    return {
        "LaunchTemplateVersions": [
            template_version(
                "lt-0000000000000a001", "llm-prod", 3, "p5.48xlarge", template_nics(32), True, "pg-llm-prod"
            ),
            template_version("lt-0000000000000a002", "gpu-nodes", 1, "p5.48xlarge", [], True),
            template_version("lt-0000000000000a002", "gpu-nodes", 2, "p5.48xlarge", template_nics(32), False),
            template_version(
                "lt-0000000000000a003",
                "p4d-public",
                4,
                "p4d.24xlarge",
                template_nics(4, public_first=True),
                True,
            ),
            template_version("lt-0000000000000a004", "p4d-one-efa", 1, "p4d.24xlarge", template_nics(1), True),
            template_version("lt-0000000000000a005", "web", 7, "c5.large", [], True),
        ]
    }


def _capacity_block_reservation() -> dict[str, Any]:
    """describe-capacity-reservations: the Capacity Block the demo's block instances run in."""
    return {
        "CapacityReservations": [
            {
                "CapacityReservationId": "cr-0cb000000000000b1",
                "OwnerId": ACCOUNT,
                "InstanceType": "p5.48xlarge",
                "InstancePlatform": "Linux/UNIX",
                "AvailabilityZone": "us-east-1a",
                "Tenancy": "default",
                "TotalInstanceCount": 2,
                "AvailableInstanceCount": 0,
                "State": "active",
                "ReservationType": "capacity-block",
                "CapacityBlockId": "cb-0cb000000000000b1",
                "StartDate": "2026-11-20T00:00:00+00:00",
                "EndDate": "2026-12-04T11:30:00+00:00",
                "EndDateType": "limited",
                "InstanceMatchCriteria": "targeted",
                "CreateDate": "2026-11-10T00:00:00+00:00",
            },
        ]
    }


def build_demo(folder: Path) -> None:
    a = Account()
    prod = _fabric_clusters(a)
    block = _other_clusters(a)
    used = {i["InstanceType"] for r in a.reservations for i in r["Instances"]} | {"g5.8xlarge", "g5.12xlarge"}
    topology = _instance_topology(prod, block)
    in_block = next(i for i in topology["Instances"] if "CapacityBlockId" in i)
    write(
        folder,
        {
            "describe-instances.json": {"Reservations": a.reservations},
            "describe-instance-types.json": {"InstanceTypes": recorded_instance_types(used)},
            "describe-placement-groups.json": placement_groups(
                {
                    "pg-llm-prod": "cluster",
                    "pg-llm-exp": "cluster",
                    "pg-bert": "cluster",
                    "pg-research": "cluster",
                    "pg-mixed": "cluster",
                    "pg-spread": "spread",
                    "pg-trn": "cluster",
                }
            ),
            "describe-security-groups.json": security_groups(),
            "describe-subnets.json": subnets(),
            "describe-launch-template-versions.json": _launch_template_versions(),
            "describe-capacity-reservations.json": _capacity_block_reservation(),
            "describe-instance-topology.json": topology,
            # Where the Capacity Block's reservation sits (EC2 API reference, CapacityReservationTopology; no
            # CapacityBlockId: that names UltraServer reservations only): the layers its first instance reports.
            "describe-capacity-reservation-topology.json": {
                "CapacityReservations": [
                    {
                        "CapacityReservationId": "cr-0cb000000000000b1",
                        "State": "active",
                        "InstanceType": "p5.48xlarge",
                        "NetworkNodes": in_block["NetworkNodes"],
                        "AvailabilityZone": "us-east-1a",
                        "AvailabilityZoneId": "use1-az1",
                    }
                ]
            },
        },
    )


def main() -> None:
    target = ROOT / "fixtures" / "demo" / "aws"
    build_demo(target)
    print(f"wrote demo account to {target}")
