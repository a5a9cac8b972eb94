"""The collector against moto's EC2 server over HTTP on 127.0.0.1.

moto shows instances, subnets, security groups, launch templates and real instance-type data, but not EFA
interfaces or placement groups (DescribePlacementGroups answers HTTP 500 there): exactly what a partly
failing account looks like. The collector must judge what it saw and call the run incomplete.
"""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest

from fabriccheck import flow
from fabriccheck.providers.aws import collect

moto_server = pytest.importorskip("moto.server")


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def test_moto_account_without_efa(endpoint: str) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1", endpoint_url=endpoint)
    vpc = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.1.0.0/20", AvailabilityZone="us-east-1a")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="efa", Description="efa", VpcId=vpc)["GroupId"]
    ec2.authorize_security_group_ingress(
        GroupId=group, IpPermissions=[{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group}]}]
    )
    ec2.run_instances(
        ImageId="ami-12c6146b",
        MinCount=3,
        MaxCount=3,
        InstanceType="p4d.24xlarge",
        SubnetId=subnet,
        SecurityGroupIds=[group],
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": "aws:autoscaling:groupName", "Value": "trainers"}]}
        ],
    )
    ec2.create_launch_template(
        LaunchTemplateName="gpu",
        LaunchTemplateData={
            "InstanceType": "p5.48xlarge",
            "NetworkInterfaces": [{"DeviceIndex": 0, "InterfaceType": "interface"}],
        },
    )

    inventory = collect.collect_region(ec2, "us-east-1")
    # moto's real instance-type data came through the live call
    assert inventory.capabilities["p4d.24xlarge"].fabric_interfaces == 4
    assert len([n for n in inventory.nodes if n.instance_type == "p4d.24xlarge"]) == 3
    failed = {e.call for e in inventory.errors}
    assert "DescribePlacementGroups" in failed  # moto does not implement it
    report = flow.run(inventory, flow.Options())
    assert report.complete is False
    rules = {(f.rule, len(f.resources)) for f in report.findings}
    assert ("AWS101", 1) in rules and sum(1 for f in report.findings if f.rule == "AWS101") == 3
    assert any(f.rule == "AWS140" for f in report.findings)
    # placement could not be judged without the placement-group answer: no AWS120 guess
    assert not any(f.rule == "AWS120" for f in report.findings)
