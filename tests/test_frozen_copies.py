"""A copy of a frozen value (model.Frozen.model_copy) is made afresh: no derived value of the original (its kept hash,
a cached property such as NodeShape.primary_interface) survives into a copy whose fields differ."""

from __future__ import annotations

from fabriccheck.model import NetworkInterface, NodeShape

# Two NICs of one p5.48xlarge-like node: the primary one is on network card 0, device 0 (EC2 DescribeInstances
# NetworkInterfaces[].Attachment.NetworkCardIndex / DeviceIndex, as providers/aws/normalize.py reads them).
PRIMARY = NetworkInterface(network="vpc-1", subnet="subnet-1", network_card_index=0, device_index=0)
SECOND = NetworkInterface(interface_type="efa", network="vpc-1", subnet="subnet-1", network_card_index=1)
OTHER = NetworkInterface(network="vpc-2", subnet="subnet-2", network_card_index=0, device_index=0)


def test_a_copy_with_other_interfaces_finds_its_own_primary_interface() -> None:
    shape = NodeShape(account="111122223333", region="us-east-1", interfaces=(SECOND, PRIMARY))
    assert shape.primary_interface == PRIMARY  # computed and kept on the original
    moved = shape.model_copy(update={"interfaces": (SECOND, OTHER)})
    assert moved.primary_interface == OTHER
    assert shape.primary_interface == PRIMARY


def test_a_copy_is_hashed_and_compared_by_its_own_fields() -> None:
    shape = NodeShape(account="111122223333", region="us-east-1", interfaces=(PRIMARY,))
    assert shape.primary_interface == PRIMARY and hash(shape)  # both derived values kept on the original
    moved = shape.model_copy(update={"region": "us-west-2"})
    made = NodeShape(account="111122223333", region="us-west-2", interfaces=(PRIMARY,))
    assert moved == made and hash(moved) == hash(made) and moved != shape
    assert moved.model_copy(update={"region": "us-east-1"}) == shape
