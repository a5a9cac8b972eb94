"""Capability catalog: what fabric an instance type has, from the cloud's live answer or sourced tables.

Lookup order for a type: the live answer in the inventory (AWS DescribeInstanceTypes), with fields the API
does not carry (GPUDirect RDMA, ordinary-Ethernet share) filled from the hand-curated `catalog.yaml`; then
`catalog.yaml` alone; then `aws_instance_types.json`, a recorded DescribeInstanceTypes answer. A type in none
of these is unknown, and is reported as unknown, never as "no fabric".
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

import orjson

from fabriccheck import shipped
from fabriccheck.cloud import CloudSupport, support
from fabriccheck.model import PROVIDERS, Capability, FabricKind

DATA = resources.files("fabriccheck") / "data"
# A recorded type-listing answer (the file says which provider and source) covering every type of that cloud.
RECORDED_TYPES = "aws_instance_types.json"


@functools.cache
def _catalog_doc() -> tuple[dict[str, dict[str, Any]], dict[str, str], str]:
    """The shipped table's rows by type, its sources and its date, as parsed."""
    doc = shipped.load_yaml((DATA / "catalog.yaml").read_text())
    return {row["type"]: row for row in doc["types"]}, doc["sources"], doc["as_of"]


# Built one row at a time, as a run asks for it: a run looks up a few types of the hundred rows.
@functools.cache
def _catalog_row(name: str) -> Capability | None:
    rows, sources, as_of = _catalog_doc()
    row = rows.get(name)
    if row is None:
        return None
    cited = "; ".join(sources[tag] for tag in row["sources"])
    if row.get("uncertain"):
        cited += f" (uncertain: {row['uncertain']})"
    return Capability(
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


def _catalog_rows() -> tuple[dict[str, Capability], str]:
    """Every row of the shipped table, and its date."""
    rows, _, as_of = _catalog_doc()
    return {name: cap for name in rows if (cap := _catalog_row(name)) is not None}, as_of


@functools.cache
def _recorded_doc() -> dict[str, Any]:
    doc: dict[str, Any] = orjson.loads((DATA / RECORDED_TYPES).read_bytes())
    return doc


# Built one type at a time, as a run asks for it: validating all 1,400 recorded types cost more than the
# lookups of a whole run (a GCP or Azure run asks for none of them).
@functools.cache
def _recorded_type(name: str) -> Capability | None:
    doc = _recorded_doc()
    fields = doc["types"].get(name)
    if fields is None:
        return None
    return Capability(instance_type=name, provider=doc["provider"], source=doc["source"], as_of=doc["as_of"], **fields)


def _recorded_types() -> dict[str, Capability]:
    """Every recorded type."""
    return {name: cap for name in _recorded_doc()["types"] if (cap := _recorded_type(name)) is not None}


def catalog_entry(instance_type: str) -> Capability | None:
    """The shipped-table answer for a type, else what its cloud reads from its name alone, or None."""
    found = _catalog_row(instance_type)
    if found is None:
        found = _recorded_type(instance_type)
    return found if found is not None else _named(instance_type)


@functools.cache
def _named(instance_type: str) -> Capability | None:
    for provider in PROVIDERS:
        cloud = support(provider)
        if cloud.owns(instance_type):
            return cloud.named_capability(instance_type)
    return None


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


def known_types(provider: str, live: dict[str, Capability]) -> set[str]:
    """Every type of one provider that the live answer or the shipped tables know."""
    rows = _catalog_doc()[0]
    names = {n for n, c in live.items() if c.provider == provider}
    names |= {n for n, row in rows.items() if row["provider"] == provider}
    recorded = _recorded_doc()
    if recorded["provider"] == provider:
        names |= set(recorded["types"])
    return names


@dataclass(frozen=True)
class Sibling:
    instance_type: str
    capability: Capability


def fabric_siblings(cloud: CloudSupport, instance_type: str, live: dict[str, Capability]) -> list[Sibling]:
    """Types of the same provider and generation (the provider parses its own names) that have a fabric and
    the same accelerator, fewest accelerators first."""
    own = resolve(instance_type, live)
    accelerator = own.accelerator_name if own else None
    gen = cloud.generation(instance_type)
    found = []
    for name in known_types(cloud.name, live):
        if name == instance_type or cloud.generation(name) != gen:
            continue
        cap = resolve(name, live)
        if cap is None or cap.fabric is FabricKind.NONE or cap.accelerators == 0:
            continue
        if accelerator and cap.accelerator_name and cap.accelerator_name != accelerator:
            continue  # g6 (L4) is no stand-in for g6e (L40S), nor a3-highgpu (H100) for a3-ultragpu (H200)
        found.append(Sibling(name, cap))
    return sorted(found, key=lambda s: (s.capability.accelerators, cloud.size_rank(s.instance_type), s.instance_type))


@dataclass(frozen=True)
class Accelerator:
    name: str
    peak_tflops: float
    nvlink_gbytes: float
    mfu: float
    sources: tuple[str, ...]
    allreduce_busbw_gbytes: float | None = None  # measured single-node all_reduce busbw, when sourced
    nvls: bool = False  # NVLink SHARP (NVSwitch reductions): NCCL's NVLS / NVLSTree algorithms apply


@functools.cache
def accelerators() -> dict[str, Accelerator]:
    doc: dict[str, Any] = shipped.load_yaml((DATA / "accelerators.yaml").read_text())
    return {
        name: Accelerator(
            name,
            row["peak_tflops"],
            row["nvlink_gbytes"],
            row["mfu"],
            tuple(row["sources"]),
            row.get("allreduce_busbw_gbytes"),
            bool(row.get("nvls", False)),
        )
        for name, row in doc["accelerators"].items()
    }
