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
    """One device's figures (data/accelerators.yaml); a figure no source gives is None and the model says so."""

    name: str
    peak_tflops: float | None
    nvlink_gbytes: float | None
    mfu: float | None
    sources: tuple[str, ...]
    allreduce_busbw_gbytes: float | None = None  # measured single-node all_reduce busbw, when sourced
    nvls: bool = False  # NVLink SHARP (NVSwitch reductions): NCCL's NVLS / NVLSTree algorithms apply
    assumed: tuple[str, ...] = ()  # the figures no vendor publishes, taken as an assumption
    aliases: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()  # the figures a full estimate needs that no source gives, in FIGURES' words
    host_link_gbytes: float | None = None  # one direction, GPU to host memory (PCIe, or NVLink-C2C on Grace)
    nvlink_domain_gpus: int | None = None  # GPUs one multi-node NVLink domain holds (NVL72), when beyond a node
    # measured all_reduce busbw over a whole multi-node NVLink domain (MNNVL with NVLS), when sourced
    domain_allreduce_busbw_gbytes: float | None = None
    memory_gbytes: float | None = None  # device memory (the larger of a part's sizes)


# What each figure is, for the one line that says which is missing or assumed.
FIGURES = {
    "peak_tflops": "dense BF16/FP16 peak throughput",
    "nvlink_gbytes": "NVLink/PCIe bandwidth between the devices of a node",
    "allreduce_busbw_gbytes": "single-node all_reduce busbw",
    "mfu": "MFU prior",
    "nvls": "NVLink SHARP",
    "host_link_gbytes": "GPU-to-host bandwidth (the path without GPUDirect RDMA)",
    "nvlink_domain_gpus": "multi-node NVLink domain size",
    "domain_allreduce_busbw_gbytes": "all_reduce busbw over a multi-node NVLink domain",
    "memory_gbytes": "device memory",
}
NEEDED = ("nvlink_gbytes", "peak_tflops", "mfu")  # for collectives (the first) and step times (all three)
# Words that name the maker or the memory, not the device: "NVIDIA H100 80GB HBM3" is H100, "Tesla V100-SXM2-32GB"
# is V100 (nccl-tests device lines). A form factor with other figures ("H100 PCIe", "V100-PCIE") stays unknown.
_VENDOR_WORDS = ("nvidia", "tesla", "amd", "habana", "aws")
_MEMORY = re.compile(r"^\d+\s*gb$|^hbm\d*e?$|^-?sxm\d*$")


def _figure(row: dict[str, Any], key: str) -> tuple[Any, str | None, bool]:
    """(value, source, assumed) of one figure, written as {value, source[, assumed]}."""
    cell = row.get(key)
    if cell is None:
        return None, None, False
    return cell["value"], cell["source"], bool(cell.get("assumed", False))


@functools.cache
def accelerators() -> dict[str, Accelerator]:
    doc: dict[str, Any] = shipped.load_yaml((DATA / "accelerators.yaml").read_text())
    found = {}
    for name, row in doc["accelerators"].items():
        figures = {key: _figure(row, key) for key in FIGURES}
        found[name] = Accelerator(
            name,
            figures["peak_tflops"][0],
            figures["nvlink_gbytes"][0],
            figures["mfu"][0],
            tuple(source for _, source, _ in figures.values() if source),
            figures["allreduce_busbw_gbytes"][0],
            bool(figures["nvls"][0]),
            tuple(key for key, (_, _, assumed) in figures.items() if assumed),
            tuple(row.get("aliases", ())),
            tuple(FIGURES[key] for key in NEEDED if figures[key][0] is None),
            figures["host_link_gbytes"][0],
            figures["nvlink_domain_gpus"][0],
            figures["domain_allreduce_busbw_gbytes"][0],
            figures["memory_gbytes"][0],
        )
    return found


def _device_words(name: str) -> str:
    words = re.sub(r"-sxm", " sxm", name, flags=re.IGNORECASE).replace("_", " ").split()  # "h100-sxm5" too
    kept = [w for w in words if w.lower() not in _VENDOR_WORDS and not _MEMORY.match(w.lower())]
    return " ".join(kept).lower()


@functools.cache
def _accelerator_names() -> dict[str, str]:
    """Every name and alias, lowered and without maker or memory words -> the table's name."""
    names: dict[str, str] = {}
    for name, accel in accelerators().items():
        for alias in (name, *accel.aliases):
            names.setdefault(alias.lower(), name)
            names.setdefault(_device_words(alias), name)
    return names


@functools.cache
def accelerator(name: str | None) -> Accelerator | None:
    """The table's row for a device name as the catalog, a cloud API, the user or nccl-tests writes it."""
    if not name:
        return None
    table = accelerators()
    if name in table:
        return table[name]
    names = _accelerator_names()
    key = names.get(name.strip().lower()) or names.get(_device_words(name))
    return table[key] if key else None


def nvlink_domain_gpus(instance_type: str | None) -> int | None:
    """GPUs one multi-node NVLink domain of the type's accelerator holds (72 for GB200/GB300 NVL72), per the shipped
    catalog and accelerator table; None for a type whose NVLink ends at the node, or unknown."""
    cap = catalog_entry(instance_type) if instance_type else None
    accel = accelerator(cap.accelerator_name) if cap is not None else None
    return accel.nvlink_domain_gpus if accel is not None else None
