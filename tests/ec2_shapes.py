"""Small EC2 answers in the API's own shape (what `aws ec2 describe-* --output json` prints), for tests that
need a particular account, layout or tag. tests/test_scope.py checks them against botocore's EC2 model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

ACCOUNT = "111122223333"


def instance(
    instance_id: str,
    instance_type: str = "p4d.24xlarge",
    *,
    account: str = ACCOUNT,
    zone: str = "us-east-1a",
    efa: int = 4,
    group: str | None = "pg-train",
    tags: dict[str, str] | None = None,
    state: str = "running",
    security_group: str = "sg-efa",
    **extra: Any,
) -> dict[str, Any]:
    """One instance with `efa` EFA interfaces (one per network card) or, with efa=0, one ENA interface."""
    subnet = f"subnet-{account[:4]}{zone[-1]}"
    vpc = f"vpc-{account[:8]}"
    placement: dict[str, Any] = {"AvailabilityZone": zone, "Tenancy": "default"}
    if group:
        placement["GroupName"] = group
    cards = range(efa) if efa else range(1)
    return {
        "InstanceId": instance_id,
        "InstanceType": instance_type,
        "ImageId": "ami-0abcdef1234567890",
        "State": {"Code": {"running": 16, "stopped": 80, "pending": 0}.get(state, 48), "Name": state},
        "Placement": placement,
        "SubnetId": subnet,
        "VpcId": vpc,
        "Tags": [{"Key": k, "Value": v} for k, v in (tags or {"aws:autoscaling:groupName": "trainers"}).items()],
        "NetworkInterfaces": [
            {
                "NetworkInterfaceId": f"eni-{instance_id[2:12]}{card:03d}",
                "InterfaceType": ("efa" if card == 0 else "efa-only") if efa else "interface",
                "Attachment": {"DeviceIndex": 0, "NetworkCardIndex": card, "Status": "attached"},
                "Groups": [{"GroupId": security_group, "GroupName": security_group}],
                "OwnerId": account,
                "SubnetId": subnet,
                "VpcId": vpc,
            }
            for card in cards
        ],
        **extra,
    }


def security_group(group_id: str = "sg-efa", account: str = ACCOUNT, allows_itself: bool = True) -> dict[str, Any]:
    egress = (
        [{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group_id, "UserId": account}]}]
        if allows_itself
        else [{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]
    )
    return {
        "GroupId": group_id,
        "GroupName": group_id,
        "Description": "EFA",
        "OwnerId": account,
        "VpcId": f"vpc-{account[:8]}",
        "IpPermissions": [{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group_id, "UserId": account}]}],
        "IpPermissionsEgress": egress,
    }


def placement_group(name: str = "pg-train", account: str = ACCOUNT, strategy: str = "cluster") -> dict[str, Any]:
    return {
        "GroupName": name,
        "GroupId": f"pg-{abs(hash(name)) % 10**12:012d}",
        "GroupArn": f"arn:aws:ec2:us-east-1:{account}:placement-group/{name}",
        "State": "available",
        "Strategy": strategy,
    }


def answers(
    instances: list[dict[str, Any]],
    *,
    account: str = ACCOUNT,
    groups: list[dict[str, Any]] | None = None,
    placement_groups: list[dict[str, Any]] | None = None,
    templates: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One account's answers, file name -> document."""
    zones = sorted({i["Placement"]["AvailabilityZone"] for i in instances}) or ["us-east-1a"]
    return {
        "describe-instances.json": {
            "Reservations": [
                {"ReservationId": f"r-{account[:8]}", "OwnerId": account, "Groups": [], "Instances": instances}
            ]
        },
        "describe-security-groups.json": {
            "SecurityGroups": groups if groups is not None else [security_group(account=account)]
        },
        "describe-placement-groups.json": {
            "PlacementGroups": placement_groups if placement_groups is not None else [placement_group(account=account)]
        },
        "describe-subnets.json": {
            "Subnets": [
                {
                    "SubnetId": f"subnet-{account[:4]}{zone[-1]}",
                    "VpcId": f"vpc-{account[:8]}",
                    "AvailabilityZone": zone,
                    "OwnerId": account,
                    "MapPublicIpOnLaunch": False,
                }
                for zone in zones
            ]
        },
        "describe-launch-template-versions.json": {"LaunchTemplateVersions": templates or []},
        "describe-capacity-reservations.json": {"CapacityReservations": []},
    }


def write(folder: Path, docs: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, doc in docs.items():
        (folder / name).write_text(json.dumps(doc))
    return folder


DEMO_AWS = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"


def demo_with_groups_renamed(folder: Path, names: dict[str, str]) -> Path:
    """The demo's AWS dump (fixtures/demo/aws) copied to `folder`, its Auto Scaling group names (the
    aws:autoscaling:groupName tags) renamed by `names` (old -> new); returns `folder`."""
    shutil.copytree(DEMO_AWS, folder)
    path = folder / "describe-instances.json"
    answer = json.loads(path.read_text())
    for reservation in answer["Reservations"]:
        for item in reservation["Instances"]:
            for tag in item.get("Tags", []):
                if tag["Key"] == "aws:autoscaling:groupName" and tag["Value"] in names:
                    tag["Value"] = names[tag["Value"]]
    path.write_text(json.dumps(answer, indent=2))
    return folder
