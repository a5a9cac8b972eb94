"""Nodes built without validation (fabriccheck/trusted.py) are the nodes validation makes, and a misshapen
answer still fails with one line naming the field even where the normalizer skips validating."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from build_demo_gcp import Project, build

from fabriccheck.errors import FabricCheckError
from fabriccheck.model import NetworkInterface, Node, Placement
from fabriccheck.providers.gcp.normalize import INSTANCES, normalize
from fabriccheck.trusted import build as build_model


def _values() -> dict[str, Any]:
    return {
        "id": "vm-1",
        "provider": "gcp",
        "account": "p",
        "region": "us-central1",
        "zone": "us-central1-a",
        "instance_type": "a3-highgpu-8g",
        "tags": {"pool": "a"},
        "interfaces": [{"id": "vm-1/nic0", "network": "n", "device_index": 0}, {"id": "vm-1/nic1", "device_index": 1}],
        "placement": [{"kind": "resource-policy", "id": "compact"}],
    }


def test_a_built_node_is_the_validated_node() -> None:
    values = _values()
    validated = Node.model_validate(values)
    built = build_model(
        Node,
        {
            **values,
            "interfaces": [build_model(NetworkInterface, i) for i in values["interfaces"]],
            "placement": [build_model(Placement, p) for p in values["placement"]],
        },
    )
    assert built == validated
    assert built.model_dump_json() == validated.model_dump_json()  # same fields, same order
    assert built.interfaces[1].security_groups is not built.interfaces[0].security_groups  # fresh defaults
    built.interfaces[0].subnet = "s"  # assignment works as on a validated instance
    assert built.interfaces[0].subnet == "s"


def test_build_refuses_an_unknown_or_missing_field() -> None:
    with pytest.raises(ValueError, match="unknown field"):
        build_model(Placement, {"kind": "k", "id": "i", "extra": 1})
    with pytest.raises(ValueError, match="required field"):
        build_model(Placement, {"kind": "k"})


def _instances() -> list[dict[str, Any]]:
    project = Project()
    build(project)
    instances: list[dict[str, Any]] = project.instances
    return instances


def test_gcp_nodes_built_without_validation_equal_validated_ones() -> None:
    instances = _instances()
    nodes = normalize({INSTANCES: instances}, None, lambda c: c.dump_file).nodes
    assert len(nodes) == len(instances) > 2
    for node in nodes:
        assert Node.model_validate(node.model_dump()) == node


@pytest.mark.parametrize("where", [0, -1])
def test_a_bad_nic_is_one_error_whether_its_shape_is_new_or_follows_good_ones(where: int) -> None:
    instances = copy.deepcopy(_instances())
    instances[where]["networkInterfaces"][0]["name"] = "nic999"  # device index 999: beyond any machine
    with pytest.raises(FabricCheckError, match=r"instances-list.json: \[\d+\]: .*device_index"):
        normalize({INSTANCES: instances}, None, lambda c: c.dump_file)


def test_a_name_that_is_no_string_is_validated_not_trusted() -> None:
    instances = copy.deepcopy(_instances())
    instances[-1]["name"] = ["not", "a", "name"]
    instances[-1]["scheduling"] = {"provisioningModel": "FLEX_START"}  # the name becomes a placement id
    with pytest.raises(FabricCheckError, match=r"instances-list.json: \[\d+\]: .*placement"):
        normalize({INSTANCES: instances}, None, lambda c: c.dump_file)
