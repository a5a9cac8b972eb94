"""Capability catalog: what fabric an instance type has, from the cloud's live answer or sourced tables.

Lookup order for a type: the live answer in the inventory (AWS DescribeInstanceTypes), with fields the API
does not carry (GPUDirect RDMA, ordinary-Ethernet share) filled from the hand-curated `catalog.yaml`; then
`catalog.yaml` alone; then `aws_instance_types.json`, a recorded DescribeInstanceTypes answer. A type in none
of these is unknown, and is reported as unknown, never as "no fabric".
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import orjson
import yaml

from fabriccheck.model import Capability, FabricKind

DATA = resources.files("fabriccheck") / "data"

# Types whose EFA traffic cannot cross to other types (AWS EFA limitations; fabric-requirements A8).
EFA_ISOLATED_FAMILIES = ("p4d", "p4de", "dl1")


@functools.cache
def _catalog_rows() -> tuple[dict[str, Capability], str]:
    doc = yaml.load((DATA / "catalog.yaml").read_text(), Loader=yaml.CSafeLoader)
    sources: dict[str, str] = doc["sources"]
    as_of: str = doc["as_of"]
    rows: dict[str, Capability] = {}
    for row in doc["types"]:
        cited = "; ".join(sources[tag] for tag in row["sources"])
        if row.get("uncertain"):
            cited += f" (uncertain: {row['uncertain']})"
        rows[row["type"]] = Capability(
            instance_type=row["type"],
            provider=row["provider"],
            fabric=FabricKind(row["fabric"]),
            fabric_interfaces=row.get("fabric_interfaces", 0),
            fabric_gbps=row.get("fabric_gbps"),
            ethernet_gbps=row.get("ethernet_gbps"),
            gpudirect_rdma=row.get("gpudirect_rdma"),
            network_cards=row.get("network_cards"),
            accelerators=row.get("accelerators", 0),
            accelerator_name=row.get("accelerator_name"),
            source=f"fabriccheck catalog: {cited}",
            as_of=as_of,
        )
    return rows, as_of


@functools.cache
def _recorded_aws_types() -> dict[str, Capability]:
    doc = orjson.loads((DATA / "aws_instance_types.json").read_bytes())
    source = doc["source"]
    return {
        name: Capability(instance_type=name, provider="aws", source=source, as_of=doc["as_of"], **fields)
        for name, fields in doc["types"].items()
    }


def catalog_entry(instance_type: str) -> Capability | None:
    """The shipped-table answer for a type, or None."""
    rows, _ = _catalog_rows()
    if instance_type in rows:
        return rows[instance_type]
    return _recorded_aws_types().get(instance_type)


def resolve(instance_type: str, live: dict[str, Capability]) -> Capability | None:
    """Best known capability of a type: the live answer completed from the catalog, else the catalog."""
    found = live.get(instance_type)
    table = catalog_entry(instance_type)
    if found is None:
        return table
    if table is None:
        return found
    filled = {
        field: getattr(table, field)
        for field in ("gpudirect_rdma", "ethernet_gbps", "fabric_gbps", "accelerator_name")
        if getattr(found, field) is None and getattr(table, field) is not None
    }
    return found.model_copy(update=filled) if filled else found


def family(instance_type: str) -> str:
    """'p4de.24xlarge' -> 'p4de'; 'Standard_ND96isr_H100_v5' -> the whole name (no families on Azure yet)."""
    return instance_type.split(".", 1)[0]


_GENERATION = re.compile(r"^([a-z]+\d+)")


def generation(instance_type: str) -> str:
    """The AWS generation a type belongs to: p3 and p3dn, g6 and g6e, trn1 and trn1n share one."""
    match = _GENERATION.match(family(instance_type))
    return match.group(1) if match else family(instance_type)


@dataclass(frozen=True)
class Sibling:
    instance_type: str
    capability: Capability


def fabric_siblings(instance_type: str, live: dict[str, Capability]) -> list[Sibling]:
    """Types of the same generation that have a fabric, fewest accelerators first."""
    gen = generation(instance_type)
    names = set(live) | set(_catalog_rows()[0]) | set(_recorded_aws_types())
    found = []
    for name in names:
        if name == instance_type or generation(name) != gen:
            continue
        cap = resolve(name, live)
        if cap is not None and cap.fabric is not FabricKind.NONE and cap.accelerators > 0:
            found.append(Sibling(name, cap))
    return sorted(found, key=lambda s: (s.capability.accelerators, _size(s.instance_type), s.instance_type))


def _size(instance_type: str) -> int:
    """'8xlarge' -> 8, 'xlarge' -> 1, 'metal' -> large: smaller sizes are suggested first."""
    size = instance_type.split(".", 1)[-1]
    match = re.match(r"(\d+)xlarge", size)
    return int(match.group(1)) if match else (1 if size.endswith("large") else 10_000)


@dataclass(frozen=True)
class Accelerator:
    name: str
    peak_tflops: float
    nvlink_gbytes: float
    mfu: float
    sources: tuple[str, ...]


@functools.cache
def accelerators() -> dict[str, Accelerator]:
    doc: dict[str, Any] = yaml.load((DATA / "accelerators.yaml").read_text(), Loader=yaml.CSafeLoader)
    return {
        name: Accelerator(name, row["peak_tflops"], row["nvlink_gbytes"], row["mfu"], tuple(row["sources"]))
        for name, row in doc["accelerators"].items()
    }
