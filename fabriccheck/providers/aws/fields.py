"""The fields the AWS normalizer reads of a DescribeInstances reservation, as TypedDicts: a dump's
describe-instances.json is parsed with these only, batch by batch (sources/stream.py), skipping the rest in C (an
instance as the CLI prints it has some fifty fields; the normalizer reads a dozen). Values whose type the answer
might get wrong are `Any`, so that the normalizer names the fault as it does for a full parse; an object or list
of another type makes msgspec decline the batch, which is then parsed whole. tests/test_projected.py checks the
projection against every field the normalizer reads of the fixtures' instances."""

from __future__ import annotations

from typing import Any, TypedDict


class _Group(TypedDict, total=False):
    GroupId: Any


class _Association(TypedDict, total=False):
    PublicIp: Any


class _Attachment(TypedDict, total=False):
    NetworkCardIndex: Any
    DeviceIndex: Any


class _Interface(TypedDict, total=False):
    NetworkInterfaceId: Any
    InterfaceType: Any
    VpcId: Any
    SubnetId: Any
    Groups: list[_Group] | None
    Association: _Association | None
    Attachment: _Attachment | None


class _State(TypedDict, total=False):
    Name: Any


class _Placement(TypedDict, total=False):
    AvailabilityZone: Any
    GroupName: Any


class _Tag(TypedDict, total=False):
    Key: Any
    Value: Any


class InstanceFields(TypedDict, total=False):
    InstanceId: Any
    InstanceType: Any
    State: _State | None
    Placement: _Placement | None
    VpcId: Any
    ImageId: Any
    Tags: list[_Tag] | None
    CapacityBlockId: Any
    InstanceLifecycle: Any
    CapacityReservationId: Any
    OutpostArn: Any
    NetworkInterfaces: list[_Interface] | None


class ReservationFields(TypedDict, total=False):
    OwnerId: Any
    Instances: list[InstanceFields]
