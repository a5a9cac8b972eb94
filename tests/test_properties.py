"""Property-based tests: random shapes never crash the dump reader or the model uncleanly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabriccheck import flow
from fabriccheck.errors import FabricCheckError
from fabriccheck.providers.aws import normalize
from fabriccheck.sources.snapshot import load_inventory

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"
KEYS = [
    "Reservations",
    "Instances",
    "InstanceId",
    "InstanceType",
    "State",
    "Name",
    "Placement",
    "AvailabilityZone",
    "GroupName",
    "NetworkInterfaces",
    "InterfaceType",
    "Attachment",
    "NetworkCardIndex",
    "Groups",
    "GroupId",
    "Tags",
    "Key",
    "Value",
    "SecurityGroups",
    "IpPermissions",
    "IpPermissionsEgress",
    "UserIdGroupPairs",
    "IpProtocol",
    "Subnets",
    "SubnetId",
    "PlacementGroups",
    "Strategy",
    "LaunchTemplateVersions",
    "LaunchTemplateId",
    "LaunchTemplateData",
    "VersionNumber",
    "InstanceTypes",
    "NetworkInfo",
    "EfaSupported",
    "EfaInfo",
    "MaximumEfaInterfaces",
    "NetworkCards",
    "GpuInfo",
    "Gpus",
    "Count",
    "CapacityReservations",
    "CapacityReservationId",
    "NetworkNodes",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5000),
    st.floats(allow_nan=False),
    st.sampled_from(
        ["running", "terminated", "efa", "efa-only", "p5.48xlarge", "us-east-1a", "cluster", "-1", "i-1", "sg-1", ""]
    ),
)
shapes: Any = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=6)),
    max_leaves=30,
)


def _demo(name: str) -> Any:
    return json.loads((DEMO / name).read_text())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call=st.sampled_from(normalize.CALLS), doc=shapes)
def test_random_answers_normalize_or_fail_cleanly(call: normalize.Ec2Call, doc: Any) -> None:
    try:
        inventory = normalize.normalize({call: doc}, "us-east-1", lambda c: c.dump_file)
    except FabricCheckError as exc:
        assert call.dump_file in str(exc) and "\n" not in str(exc)
        return
    flow.run(inventory, flow.Options())  # what normalized must also be judged without crashing


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_mutated_real_answers_normalize_or_fail_cleanly(data: st.DataObject) -> None:
    """Take a real answer and replace one nested value by a random shape."""
    call = data.draw(st.sampled_from([c for c in normalize.CALLS]))
    doc = _demo(call.dump_file)
    node: Any = doc
    path = []
    while isinstance(node, (dict, list)) and node and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node))))
        path.append(key)
        parent, node = node, node[key]
    if path:
        parent[path[-1]] = data.draw(shapes)
    try:
        inventory = normalize.normalize({call: doc}, "us-east-1", lambda c: c.dump_file)
    except FabricCheckError as exc:
        assert "\n" not in str(exc)
        return
    flow.run(inventory, flow.Options())


@settings(max_examples=200, deadline=None)
@given(
    doc=st.dictionaries(
        st.sampled_from(
            [
                "schema_version",
                "nodes",
                "source",
                "capabilities",
                "errors",
                "placement_groups",
                "security_groups",
                "collected",
            ]
        ),
        shapes,
        max_size=5,
    )
)
def test_random_saved_inventories_load_or_fail_cleanly(tmp_path_factory: Any, doc: dict[str, Any]) -> None:
    path = tmp_path_factory.mktemp("inv") / "inventory.json"
    doc.setdefault("schema_version", 2)
    path.write_text(json.dumps(doc))
    try:
        inventory = load_inventory(path)
    except FabricCheckError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
        return
    flow.run(inventory, flow.Options())
