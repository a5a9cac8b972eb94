"""The files of a Slurm dump, read into plain records: what a user saves on a login node with read-only commands
(COMMANDS). nodes.json is required; every other file is optional, and its absence narrows what is judged.

JSON shapes are Slurm's data_parser (v0.0.40 to v0.0.43; SchedMD/slurm src/plugins/data_parser/v0.0.43/parsers.c
at 284c3b95): `scontrol show nodes --json` answers `{"nodes": [...], "meta": {"slurm": {"cluster": NAME}}}`
(OPENAPI_NODES_RESP, OPENAPI_META), each node with `name`, `address` (NodeAddr), `hostname`, `partitions` and
`features` (CSV_STRING: a list), `gres` (a string), `state` (NODE_STATES: a list of flags), `instance_id` and
`instance_type` (PARSER_ARRAY(NODE)); `scontrol show partitions --json` answers `{"partitions": [...]}`, each with
`name`, `nodes.configured`, `maximums.nodes` (UINT32_NO_VAL: `{"set", "infinite", "number"}`) and `topology`
(PARSER_ARRAY(PARTITION_INFO)); `squeue --json` answers `{"jobs": [...]}`, each with `job_id`, `partition`,
`job_state` (a list), `nodes` (a host list), `scheduled_nodes` (a pending job's planned host list) and `node_count`
(PARSER_ARRAY(JOB_INFO)).

Before Slurm 23.02 scontrol has no --json (Debian 12's slurm-client 22.05.8: "scontrol: unrecognized option
'--json'"), so a dump of such a cluster holds instead `sinfo --json` (sinfo.json) and the text of `scontrol show
partitions` (partitions.txt). Their 21.08 and 22.05 shapes are the openapi plugins' (SchedMD/slurm at tag
slurm-22-05-8-1, src/plugins/openapi/v0.0.38/nodes.c and jobs.c; checked against the real output of Debian's
22.05.8 in tests/test_slurm_real.py): `sinfo --json` answers `{"nodes": [...]}` as `scontrol show nodes --json`
later does, except that `state` is the base state alone (a string, "idle") and its flags are in `state_flags`
(["CLOUD", "POWERED_DOWN"]), and `meta` names no cluster; `squeue --json` writes `job_state` as one string.
From 23.02 `sinfo --json` answers `{"sinfo": [...]}` instead, one record per partition and node state
(PARSER_ARRAY(SINFO_DATA) in data_parser/v0.0.43/parsers.c: `nodes.nodes` a host list, `partition.name`,
`gres.total`, `node.state`): node names, partitions, GPUs and states, but no NodeAddr a node can be joined by.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabriccheck.errors import FabricCheckError
from fabriccheck.jsonfiles import read_json
from fabriccheck.providers.slurm.gres import gpu_types_of, gres_types
from fabriccheck.providers.slurm.hostlist import expand
from fabriccheck.providers.slurm.topology import Topology, read_topologies
from fabriccheck.textfiles import read_text

# file in the dump -> the read-only command that makes it (docs/slurm.md, `fabriccheck slurm --print-commands`).
COMMANDS: dict[str, str] = {
    "nodes.json": "scontrol show nodes --json > nodes.json",
    "sinfo.json": "sinfo --json > sinfo.json   # instead of nodes.json where scontrol has no --json (before 23.02)",
    "partitions.json": "scontrol show partitions --json > partitions.json",
    "partitions.txt": "scontrol show partitions > partitions.txt   # instead of partitions.json before 23.02",
    "jobs.json": "squeue --json > jobs.json",
    "topology.txt": "scontrol show topology > topology.txt",
    "slurm.conf": 'cp "$(dirname "$(scontrol show config | awk \'/^SLURM_CONF/ {print $3}\')")"/slurm.conf .',
    "topology.conf": "cp /etc/slurm/topology.conf .   # if the cluster has one (topology/tree or topology/block)",
    "topology.yaml": "cp /etc/slurm/topology.yaml .   # Slurm 25.05+, if the cluster has one",
    "gres.conf": "cp /etc/slurm/gres.conf .   # if the cluster has one",
}
REQUIRED = "nodes.json"
SINFO = "sinfo.json"  # read when nodes.json is not there
# Node states a node is not scheduled in now (NODE_STATES flags): counted, not judged.
_OUT = frozenset({"DOWN", "DRAIN", "FAIL", "FUTURE", "INVALID", "INVALID_REG", "MAINTENANCE", "DYNAMIC_FUTURE"})
# Cloud nodes Slurm powers up when a job needs them (power saving): judged as what a job would get.
_ON_DEMAND = frozenset({"POWERED_DOWN", "POWERING_UP", "POWERING_DOWN", "POWER_DOWN"})
_GPU_COUNT = re.compile(r"(\d+)$")


@dataclass
class SlurmNode:
    name: str
    address: str = ""  # NodeAddr
    hostname: str = ""
    partitions: list[str] = field(default_factory=list)
    gpus: int = 0
    states: list[str] = field(default_factory=list)
    instance_id: str = ""  # set by the cloud plugin, where it does
    instance_type: str = ""
    gpu_types: tuple[str, ...] = ()  # Gres= gpu types (gpu:h100:8), else gres.conf's Type= (providers/slurm/gres.py)

    @property
    def state(self) -> str:
        """running, pending (a powered-down cloud node a job would power up) or down (counted, not judged)."""
        if _OUT & set(self.states):
            return "down"
        return "pending" if _ON_DEMAND & set(self.states) else "running"


@dataclass
class Partition:
    name: str
    max_nodes: int | None = None  # None: unlimited
    topology: str = ""  # the topology.yaml name its jobs use ('' the cluster default)


@dataclass
class Job:
    id: str
    partition: str
    states: list[str]
    nodes: list[str]
    node_count: int
    scheduled: list[str] = field(default_factory=list)  # a pending job's planned nodes (scheduled_nodes)
    name: str = ""  # the job's name (squeue --json `name`): what says it is a test (nccl-tests) or training


@dataclass
class SlurmDump:
    folder: Path
    cluster: str
    nodes: list[SlurmNode]
    partitions: dict[str, Partition] | None  # None: no partitions.json
    jobs: list[Job] | None  # None: no jobs.json
    topologies: dict[str, Topology]  # by name, '' the cluster default; empty: none in the dump
    topology_plugin: str | None  # slurm.conf's TopologyPlugin (block, tree, flat), None: no slurm.conf
    read: list[str]  # the files read


def gpus_of(gres: str) -> int:
    """GPUs a Gres= string gives (`gpu:8`, `gpu:h100:8(S:0-1)`, `gpu:a100:4,nvme:1`); `gpu` alone is one."""
    total = 0
    for part in re.sub(r"\([^)]*\)", "", gres or "").split(","):
        words = part.strip().split(":")
        if words[0] != "gpu":
            continue
        found = _GPU_COUNT.search(words[-1]) if len(words) > 1 else None
        total += int(found.group(1)) if found else 1
    return total


def _number(value: Any) -> int | None:
    """A data_parser number: plain, or `{"set": true, "infinite": false, "number": N}` (None: unset/infinite)."""
    if isinstance(value, dict):
        if value.get("infinite") or not value.get("set", True):
            return None
        value = value.get("number")
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _list(value: Any) -> list[str]:
    if isinstance(value, str):  # older data_parsers and hand-made files write a CSV string
        return [v for v in value.split(",") if v]
    return [str(v) for v in value] if isinstance(value, list) else []


def _items(path: Path, key: str, command: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    doc = read_json(path, dump_file=True)
    if not isinstance(doc, dict) or not isinstance(doc.get(key), list):
        raise FabricCheckError(f"{path}: not the output of {command} (no {key} list)")
    for index, item in enumerate(doc[key]):
        if not isinstance(item, dict):
            raise FabricCheckError(f"{path}: {key}[{index}] is not an object")
    return doc[key], doc


def _states(item: dict[str, Any]) -> list[str]:
    """A node's state flags: `state` a list (data_parser, 23.02+), or `state` the base state and `state_flags` the
    flags (openapi v0.0.37 and v0.0.38, 21.08 and 22.05)."""
    return [s.upper() for s in [*_list(item.get("state")), *_list(item.get("state_flags"))]]


def _node(item: dict[str, Any], where: str) -> SlurmNode:
    if not isinstance(item.get("name"), str) or not item["name"]:
        raise FabricCheckError(f"{where} has no name")
    return SlurmNode(
        name=item["name"],
        address=str(item.get("address") or ""),
        hostname=str(item.get("hostname") or ""),
        partitions=_list(item.get("partitions")),
        gpus=gpus_of(str(item.get("gres") or "")),
        gpu_types=gpu_types_of(str(item.get("gres") or "")),
        states=_states(item),
        instance_id=str(item.get("instance_id") or ""),
        instance_type=str(item.get("instance_type") or ""),
    )


def _cluster(doc: dict[str, Any]) -> str:
    meta = doc.get("meta")
    slurm = meta.get("slurm") if isinstance(meta, dict) else None
    cluster = slurm.get("cluster") if isinstance(slurm, dict) else None
    return cluster if isinstance(cluster, str) else ""


def _nodes(path: Path, command: str = "scontrol show nodes --json") -> tuple[list[SlurmNode], str]:
    items, doc = _items(path, "nodes", command)
    return [_node(item, f"{path}: nodes[{index}]") for index, item in enumerate(items)], _cluster(doc)


def _sinfo(path: Path) -> tuple[list[SlurmNode], str]:
    """sinfo.json: a node list (21.08, 22.05), or one record per partition and state (23.02+) merged by node."""
    doc = read_json(path, dump_file=True)
    if isinstance(doc, dict) and isinstance(doc.get("nodes"), list):
        return _nodes(path, "sinfo --json")
    items, _ = _items(path, "sinfo", "sinfo --json")
    found: dict[str, SlurmNode] = {}
    for index, item in enumerate(items):
        where = f"{path}: sinfo[{index}]"
        names, partition, gres, node = item.get("nodes"), item.get("partition"), item.get("gres"), item.get("node")
        names = names.get("nodes") if isinstance(names, dict) else None
        if not isinstance(names, list | str):
            raise FabricCheckError(f"{where} has no nodes.nodes list")
        part = partition.get("name") if isinstance(partition, dict) else None
        total = str(gres.get("total") or "") if isinstance(gres, dict) else ""
        states = [s.upper() for s in _list(node.get("state"))] if isinstance(node, dict) else []
        for name in expand(names, f"{where}.nodes.nodes") if isinstance(names, str) else [str(n) for n in names]:
            made = SlurmNode(name, gpus=gpus_of(total), gpu_types=gpu_types_of(total), states=states)
            one = found.setdefault(name, made)
            if isinstance(part, str) and part and part not in one.partitions:
                one.partitions.append(part)
    return list(found.values()), _cluster(doc)


def _partitions(path: Path) -> dict[str, Partition]:
    items, _ = _items(path, "partitions", "scontrol show partitions --json")
    found = {}
    for index, item in enumerate(items):
        if not isinstance(item.get("name"), str):
            raise FabricCheckError(f"{path}: partitions[{index}] has no name")
        maximums = item.get("maximums")
        most = _number(maximums.get("nodes")) if isinstance(maximums, dict) else None
        if "maximum_nodes_per_job" in item:  # openapi/v0.0.38 (22.05 slurmrestd): -1 is INFINITE (partitions.c)
            most = _number(item["maximum_nodes_per_job"])
            most = None if most is not None and most < 0 else most
        topology = item.get("topology")
        found[item["name"]] = Partition(item["name"], most, topology if isinstance(topology, str) else "")
    return found


def _partitions_text(path: Path) -> dict[str, Partition]:
    """partitions.txt, the text of `scontrol show partitions`: one `PartitionName=NAME` record, then its `Key=Value`
    words over several lines (SchedMD/slurm src/api/partition_info.c slurm_sprint_partition_info: `MaxNodes=%u` or
    `MaxNodes=UNLIMITED`, and from 25.05 `Topology=%s`); the same text on every Slurm version."""
    found: dict[str, Partition] = {}
    for record in re.split(r"(?m)^(?=PartitionName=)", read_text(path)):
        pairs = dict(re.findall(r"(\w+)=(\S*)", record))
        if not record.strip():
            continue
        if "PartitionName" not in pairs:
            raise FabricCheckError(f"{path}: not the output of scontrol show partitions (no PartitionName=)")
        most = pairs.get("MaxNodes", "UNLIMITED")
        if most != "UNLIMITED" and not most.isdigit():
            raise FabricCheckError(f"{path}: partition {pairs['PartitionName']}: MaxNodes={most} is not a number")
        name = pairs["PartitionName"]
        found[name] = Partition(name, None if most == "UNLIMITED" else int(most), pairs.get("Topology", ""))
    return found


def _jobs(path: Path) -> list[Job]:
    items, _ = _items(path, "jobs", "squeue --json")
    jobs = []
    for index, item in enumerate(items):
        job_id = _number(item.get("job_id"))
        if job_id is None:
            raise FabricCheckError(f"{path}: jobs[{index}] has no job_id")
        nodes = expand(str(item.get("nodes") or ""), f"{path}: jobs[{index}].nodes")
        count = _number(item.get("node_count")) or len(nodes)
        states = [s.upper() for s in _list(item.get("job_state"))]
        # scheduled_nodes: where the backfill scheduler plans to start a pending job (a host list, as `nodes`;
        # SlinkyProject/slurm-client api/v0044 V0044JobInfo, generated from Slurm's OpenAPI).
        scheduled = expand(str(item.get("scheduled_nodes") or ""))
        name = str(item.get("name") or "")
        jobs.append(Job(str(job_id), str(item.get("partition") or ""), states, nodes, count, scheduled, name))
    return jobs


def conf_values(path: Path) -> dict[str, str]:
    """slurm.conf's Key=Value settings, keys lower-cased (the file's keys are case-insensitive); node and
    partition lines are left to the JSON files."""
    values: dict[str, str] = {}
    for line in read_text(path).splitlines():
        line = line.split("#", 1)[0].strip()
        key, sep, value = line.partition("=")
        if sep and key.strip() and " " not in key.strip() and key.strip().lower() not in ("nodename", "partitionname"):
            values.setdefault(key.strip().lower(), value.strip().split()[0] if value.strip() else "")
    if not values:
        raise FabricCheckError(f"{path}: no Key=Value setting (not a slurm.conf)")
    return values


def gres_gpus(path: Path) -> dict[str, int]:
    """GPUs per node that gres.conf gives (Name=gpu lines with NodeName=; Count=, else one per File= device)."""
    found: dict[str, int] = {}
    for number, raw in enumerate(read_text(path).splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        pairs = {k.lower(): v for k, v in re.findall(r"(\w+)=(\S+)", line)}
        if not line or pairs.get("name") != "gpu" or "nodename" not in pairs:
            continue
        count = pairs.get("count")
        if count is not None and not count.isdigit():
            raise FabricCheckError(f"{path}: line {number}: Count={count} is not a number")
        gpus = int(count) if count is not None else len(expand(pairs.get("file", ""), f"{path}: line {number}: File="))
        for node in expand(pairs["nodename"], f"{path}: line {number}: NodeName="):
            found[node] = found.get(node, 0) + gpus
    return found


def _given(folder: Path, name: str, instead: str) -> bool:
    """`name` is there to be read: an empty one beside its stand-in is what `scontrol ... --json > name` leaves
    where scontrol has no --json (the shell makes the file, scontrol writes nothing), and the stand-in is read."""
    path = folder / name
    return path.is_file() and not (path.stat().st_size == 0 and (folder / instead).is_file())


def read_dump(folder: Path) -> SlurmDump:
    """The Slurm files of one dump folder; nodes.json (or sinfo.json) must be there."""
    if not folder.is_dir():
        raise FabricCheckError(f"--from-dump {folder}: not a folder")
    if _given(folder, REQUIRED, SINFO):
        (nodes, cluster), read = _nodes(folder / REQUIRED), [REQUIRED]
    elif (folder / SINFO).is_file():
        (nodes, cluster), read = _sinfo(folder / SINFO), [SINFO]
    else:
        how = f"{COMMANDS[REQUIRED]}; before Slurm 23.02: {COMMANDS[SINFO].split('#')[0].strip()}"
        raise FabricCheckError(f"--from-dump {folder}: no {REQUIRED} or {SINFO} (make it with: {how})")
    partitions = jobs = conf = None
    if _given(folder, "partitions.json", "partitions.txt"):
        partitions, read = _partitions(folder / "partitions.json"), [*read, "partitions.json"]
    elif (folder / "partitions.txt").is_file():
        partitions, read = _partitions_text(folder / "partitions.txt"), [*read, "partitions.txt"]
    if (folder / "jobs.json").is_file():
        jobs, read = _jobs(folder / "jobs.json"), [*read, "jobs.json"]
    if (folder / "slurm.conf").is_file():
        conf, read = conf_values(folder / "slurm.conf"), [*read, "slurm.conf"]
    if (folder / "gres.conf").is_file():
        by_node, read = gres_gpus(folder / "gres.conf"), [*read, "gres.conf"]
        typed = gres_types(folder / "gres.conf")
        for node in nodes:
            node.gpus = node.gpus or by_node.get(node.name, 0)  # the node's own Gres= first
            node.gpu_types = node.gpu_types or typed.get(node.name, ())
    topologies = read_topologies(folder)
    read += [name for name in ("topology.txt", "topology.yaml", "topology.conf") if (folder / name).is_file()]
    plugin = None
    if conf is not None:
        plugin = conf.get("topologyplugin", "topology/flat").rsplit("/", 1)[-1]
        plugin = "flat" if plugin in ("default", "none") else plugin
        cluster = cluster or conf.get("clustername", "")
    return SlurmDump(folder, cluster or folder.resolve().name, nodes, partitions, jobs, topologies, plugin, read)
