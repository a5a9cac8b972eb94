"""Join each Slurm node to the cloud instance it runs on, strongest evidence first:

1. `instance_id`: the cloud plugin's InstanceId node field (scontrol show nodes --json, data_parser NODE
   `instance_id`), equal to the instance's id (EC2 instance id; an Azure VM's or a GCP instance's name or id);
2. `address`: NodeAddr equal to a private IP of the instance, read from the cloud dump's own files
   (EC2 describe-instances `PrivateIpAddress` and `NetworkInterfaces[].PrivateIpAddresses[]`; GCE instances
   `networkInterfaces[].networkIP`; Azure `az network nic list` `ipConfigurations[].privateIPAddress` beside
   `virtualMachine.id`). ParallelCluster sets NodeAddr to the instance's private IP when it powers a node up;
3. `name`: the node's name (or NodeHostname) is the instance's (slurm-gcp names instances after their Slurm
   nodes, `cluster-nodeset-N`; Name tag on EC2), or, for a ParallelCluster node `QUEUE-st|dy-RESOURCE-N`, the
   queue's compute resource as its instances are tagged (`parallelcluster:queue-name`,
   `parallelcluster:compute-resource-name`: AWS ParallelCluster User Guide, "View tags", compute node instance
   tags). A compute resource's instances share a type and placement, so such a node takes them, but no instance
   id: which instance is the node is not told.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from fabriccheck.jsonfiles import read_json
from fabriccheck.model import Node
from fabriccheck.providers.slurm.files import SlurmNode
from fabriccheck.sources.stream import walk

PCLUSTER_NAME = re.compile(r"^(?P<queue>.+)-(?:st|dy)-(?P<resource>.+)-\d+$")
PCLUSTER_QUEUE = "parallelcluster:queue-name"
PCLUSTER_RESOURCE = "parallelcluster:compute-resource-name"
# The files of a cloud dump that hold private IPs, and how to read (instance id, ip) pairs out of each.
_ADDRESS_FILES = ("describe-instances.json", "instances-list.json", "network-nic-list.json")


@dataclass(frozen=True)
class Joined:
    node: Node  # the cloud node (or one of the compute resource's, for a ParallelCluster name)
    how: str  # instance_id | address | name
    instance: str | None  # the instance's id; None when only its group is known


def _walk(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


def _pairs(name: str, doc: Any) -> Iterator[tuple[str, str]]:
    """(instance id or name, private ip) pairs of one cloud answer."""
    if name == "describe-instances.json":
        for item in _walk(doc):
            if isinstance(item.get("InstanceId"), str):
                for found in _walk(item):
                    if isinstance(found.get("PrivateIpAddress"), str):
                        yield item["InstanceId"], found["PrivateIpAddress"]
    elif name == "instances-list.json":
        for item in _walk(doc):
            if isinstance(item.get("networkInterfaces"), list) and isinstance(item.get("name"), str):
                for nic in item["networkInterfaces"]:
                    if isinstance(nic, dict) and isinstance(nic.get("networkIP"), str):
                        yield item["name"], nic["networkIP"]
    else:
        for item in _walk(doc):
            vm, configs = item.get("virtualMachine"), item.get("ipConfigurations")
            if isinstance(vm, dict) and isinstance(vm.get("id"), str) and isinstance(configs, list):
                for config in configs:
                    if isinstance(config, dict) and isinstance(config.get("privateIPAddress"), str):
                        yield vm["id"], config["privateIPAddress"]


class _Address(TypedDict, total=False):
    PrivateIpAddress: Any


class _Interface(TypedDict, total=False):
    PrivateIpAddress: Any
    PrivateIpAddresses: list[_Address] | None


class _Instance(TypedDict, total=False):
    InstanceId: Any
    PrivateIpAddress: Any
    NetworkInterfaces: list[_Interface] | None


class _Reservation(TypedDict, total=False):
    Instances: list[_Instance] | None


def _reservations(at: tuple[str | int, ...], opener: str) -> bool:
    return (at == () and opener == "{") or (at == ("Reservations",) and opener == "[")


def _ec2_pairs(path: Path) -> Iterator[tuple[str, str]]:
    """(instance id, private ip) pairs of a describe-instances answer, streamed with only the fields they need: the
    answer is the largest file of a dump (sources/stream.py), and the cloud's own reader has parsed it once already."""
    for at, value in walk(path, _reservations, _Reservation):
        if len(at) == 2 and at[0] == "Reservations" and isinstance(value, dict):
            yield from _pairs("describe-instances.json", {"Reservations": [value]})


def addresses(folder: Path) -> dict[str, str]:
    """Private IP -> instance id or name, from every answer of the cloud dump that carries them. A private IP is
    unique only within its network: one that instances of two VPCs, VNets or accounts share names neither, and is
    left out (a node joined to the wrong instance would be judged on another's zone and placement)."""
    found: dict[str, str] = {}
    shared: set[str] = set()
    for name in _ADDRESS_FILES:
        for path in sorted(folder.rglob(name)):
            pairs = _ec2_pairs(path) if name == "describe-instances.json" else _pairs(name, read_json(path, True))
            for instance, address in pairs:
                if found.setdefault(address, instance).lower() != instance.lower():
                    shared.add(address)
    return {address: instance for address, instance in found.items() if address not in shared}


def _keys(node: Node) -> list[str]:
    """The names one cloud node answers to: its id, the id's last part (Azure, GCP), its Name tag."""
    keys = [node.id.lower(), node.id.rsplit("/", 1)[-1].lower()]
    if node.tags.get("Name"):
        keys.append(node.tags["Name"].lower())
    return keys


class Joiner:
    """The cloud nodes of a cloud dump, indexed every way a Slurm node may name one."""

    def __init__(self, cloud_nodes: list[Node], by_address: dict[str, str]) -> None:
        self.by_key: dict[str, Node] = {}
        self.by_resource: dict[tuple[str, str], Node] = {}
        for node in cloud_nodes:
            for key in _keys(node):
                self.by_key.setdefault(key, node)
            queue, resource = node.tags.get(PCLUSTER_QUEUE), node.tags.get(PCLUSTER_RESOURCE)
            if queue and resource:
                self.by_resource.setdefault((queue, resource), node)
        self.by_address = by_address

    def join(self, slurm: SlurmNode) -> Joined | None:
        if slurm.instance_id and (found := self.by_key.get(slurm.instance_id.lower())):
            return Joined(found, "instance_id", found.id)
        owner = self.by_address.get(slurm.address)
        if owner and (found := self.by_key.get(owner.lower())):
            return Joined(found, "address", found.id)
        for name in (slurm.name, slurm.hostname):
            if name and (found := self.by_key.get(name.lower())):
                return Joined(found, "name", found.id)
        match = PCLUSTER_NAME.match(slurm.name)
        if match and (found := self.by_resource.get((match["queue"], match["resource"]))):
            return Joined(found, "name", None)
        return None
