"""Slurm dumps of other versions than the 25.x shapes of fixtures/slurm/pcluster (fixtures/slurm/SOURCES.md).

- fixtures/slurm/debian-22.05: the real output of Debian 12's Slurm 22.05.8, captured from tests/slurmctld_run.py's
  controller (tests/test_slurm_real.py checks that the controller still prints these shapes): scontrol has no
  --json, so the dump holds sinfo.json and partitions.txt.
- `sinfo --json` of Slurm 23.02+: one record per partition and node state (SchedMD/slurm
  src/plugins/data_parser/v0.0.43/parsers.c at 284c3b95: PARSER_ARRAY(SINFO_DATA), `nodes/nodes` a HOSTLIST dumped
  as a list of names, `partition` a PARTITION_INFO, `gres/total`, `node/state` NODE_STATES; OPENAPI_SINFO_RESP
  `sinfo`), inline below.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from cli_run import one_clean_line, run

from fabriccheck.providers.slurm.files import read_dump
from fabriccheck.providers.slurm.topology import from_lines

ROOT = Path(__file__).resolve().parents[1]
DEBIAN = ROOT / "fixtures" / "slurm" / "debian-22.05"


def _report(dump: Path) -> tuple[int, dict[str, Any]]:
    result = run("slurm", "--from-dump", str(dump), "-f", "json")
    assert result.returncode in (0, 1, 2) and result.stdout, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, report


def _flagged(report: dict[str, Any], rule: str) -> set[tuple[str, str]]:
    found = [f for f in report["findings"] if f["rule"] == rule]
    return {(f["cluster"].rsplit(":", 1)[-1], resource) for f in found for resource in f["resources"]}


def test_a_slurm_22_05_dump_as_the_real_controller_printed_it() -> None:
    """sinfo.json's nodes (state + state_flags), partitions.txt's MaxNodes and topology.txt's switches: gpu-5, in no
    switch, is SLURM101 in the multi-node partition wide, not in solo (MaxNodes=1)."""
    read = read_dump(DEBIAN)
    assert read.read[:2] == ["sinfo.json", "partitions.txt"]
    assert (read.cluster, read.topology_plugin) == ("fctest", "tree")  # 22.05's meta names no cluster: slurm.conf
    nodes = {n.name: n for n in read.nodes}
    assert (nodes["gpu-1"].states, nodes["gpu-1"].state) == (["IDLE", "CLOUD", "POWERED_DOWN"], "pending")
    assert read.partitions is not None and read.partitions["solo"].max_nodes == 1
    assert read.topologies[""].groups == {"leaf1": ["gpu-1", "gpu-2"], "leaf2": ["gpu-3", "gpu-4"]}
    code, report = _report(DEBIAN)
    assert _flagged(report, "SLURM101") == {("slurm-partition/wide", "gpu-5")}
    assert code == 2 and not report["complete"]  # without the cloud: never a pass


def test_nodes_json_is_read_before_sinfo_json(tmp_path: Path) -> None:
    """Where a dump holds both, scontrol's nodes.json (it names InstanceId and the cluster) is the one read, unless
    the shell left it empty."""
    dump = tmp_path / "dump"
    shutil.copytree(DEBIAN, dump)
    nodes = {"meta": {"slurm": {"cluster": "other"}}, "nodes": [{"name": "gpu-9", "partitions": ["wide"]}]}
    (dump / "nodes.json").write_text(json.dumps(nodes))
    read = read_dump(dump)
    assert [n.name for n in read.nodes] == ["gpu-9"] and read.read[0] == "nodes.json"
    # Empty, as `scontrol show nodes --json > nodes.json` leaves it where scontrol has no --json: sinfo.json is read.
    (dump / "nodes.json").write_text("")
    (dump / "partitions.json").write_text("")
    read = read_dump(dump)
    assert read.read[:2] == ["sinfo.json", "partitions.txt"] and len(read.nodes) == 5
    (dump / "sinfo.json").unlink()  # an empty nodes.json alone is still a damaged file, named
    assert "nodes.json" in one_clean_line(run("slurm", "--from-dump", str(dump)))


def test_an_upper_switch_of_scontrol_show_topology_is_no_leaf() -> None:
    """22.05 (and 25.x) print an upper switch with Nodes= as well as Switches=: only the leaves group nodes."""
    shown = from_lines((DEBIAN / "topology.txt").read_text(), "topology.txt")
    assert shown.group_of() == {"gpu-1": "leaf1", "gpu-2": "leaf1", "gpu-3": "leaf2", "gpu-4": "leaf2"}
    assert "spine" not in shown.groups


def _sinfo_record(partition: str, names: list[str], states: list[str]) -> dict[str, Any]:
    """One SINFO_DATA record (parsers.c at 284c3b95), with the fields the reader takes and a few it leaves."""
    addresses = [f"10.0.0.{i}" for i, _ in enumerate(names, 1)]
    counts = {"allocated": 0, "idle": len(names), "other": 0, "total": len(names)}
    return {
        "port": 6818,
        "node": {"state": states},
        "nodes": {**counts, "hostnames": names, "addresses": addresses, "nodes": names},
        "cpus": {"allocated": 0, "idle": 208 * len(names), "other": 0, "total": 208 * len(names)},
        "gres": {"total": "gpu:h100:8(S:0-1)", "used": "gpu:h100:0(IDX:N/A)"},
        "features": {"total": "", "active": ""},
        "partition": {"name": partition, "maximums": {"nodes": {"set": False, "infinite": True, "number": 0}}},
    }


def test_sinfo_json_of_slurm_23_02_and_later(tmp_path: Path) -> None:
    """Records per partition and state merged by node: each node once, with every partition it is in."""
    dump = tmp_path / "dump"
    dump.mkdir()
    sinfo = {
        "sinfo": [
            _sinfo_record("a3", ["a3-nodeset-0", "a3-nodeset-1"], ["IDLE"]),
            _sinfo_record("a3", ["a3-nodeset-2"], ["IDLE", "CLOUD", "POWERED_DOWN"]),
            _sinfo_record("debug", ["a3-nodeset-0"], ["IDLE"]),
        ],
        "meta": {"slurm": {"cluster": "c2", "release": "24.05.4"}},
        "errors": [],
        "warnings": [],
    }
    (dump / "sinfo.json").write_text(json.dumps(sinfo))
    (dump / "topology.conf").write_text("SwitchName=s0 Nodes=a3-nodeset-[0-1]\n")
    read = read_dump(dump)
    nodes = {n.name: n for n in read.nodes}
    assert sorted(nodes) == ["a3-nodeset-0", "a3-nodeset-1", "a3-nodeset-2"]
    assert nodes["a3-nodeset-0"].partitions == ["a3", "debug"] and nodes["a3-nodeset-0"].gpus == 8
    assert nodes["a3-nodeset-2"].state == "pending" and read.cluster == "c2"
    assert nodes["a3-nodeset-0"].address == ""  # a record's addresses are not matched to its names
    _, report = _report(dump)
    assert ("slurm-partition/a3", "a3-nodeset-2") in _flagged(report, "SLURM101")
    assert ("slurm-partition/a3", "a3-nodeset-0") not in _flagged(report, "SLURM101")


def _bad(tmp_path: Path, files: dict[str, Any]) -> str:
    dump = tmp_path / "bad"
    if dump.exists():
        shutil.rmtree(dump)
    dump.mkdir()
    for name, content in files.items():
        (dump / name).write_text(content if isinstance(content, str) else json.dumps(content))
    return one_clean_line(run("slurm", "--from-dump", str(dump)))


def test_bad_files_of_older_slurms_are_one_line_naming_them(tmp_path: Path) -> None:
    sinfo = (DEBIAN / "sinfo.json").read_text()
    assert "no nodes.json or sinfo.json (make it with: scontrol show nodes --json" in _bad(tmp_path, {})
    assert "sinfo.json: not the output of sinfo --json (no sinfo list)" in _bad(tmp_path, {"sinfo.json": {"a": 1}})
    no_names = {"sinfo": [{"partition": {"name": "p"}}]}
    assert "sinfo.json: sinfo[0] has no nodes.nodes list" in _bad(tmp_path, {"sinfo.json": no_names})
    line = _bad(tmp_path, {"sinfo.json": sinfo, "partitions.txt": "PartitionName=p MaxNodes=many\n"})
    assert "partitions.txt: partition p: MaxNodes=many is not a number" in line
    line = _bad(tmp_path, {"sinfo.json": sinfo, "partitions.txt": "NodeName=gpu-1 Arch=x86_64\n"})
    assert "partitions.txt: not the output of scontrol show partitions (no PartitionName=)" in line
