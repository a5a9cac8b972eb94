"""`fabriccheck slurm` against a real slurmctld (tests/slurmctld_run.py: Debian 12's slurm-wlm 22.05.8), read with
the real scontrol, sinfo and squeue: live, as a user on a login node, and from a dump saved with the documented
commands (files.COMMANDS). Slurm 22.05 is older than the shapes the fixtures of tests/test_slurm.py hold (25.x):
scontrol has no --json, `sinfo --json` lists the nodes with `state` a string and `state_flags`, `squeue --json`
writes `job_state` as a string, and `scontrol show topology` prints an upper switch with every node under it.

The cluster (slurmctld_run.py): partitions train (gpu-[1-4], leaf switches leaf1 and leaf2), wide (gpu-[1-5]; gpu-5
is in no switch) and solo (gpu-[4-5], MaxNodes=1); a held job in train, and job 2 given gpu-[2-3] (CONFIGURING:
its cloud nodes are being "resumed" by `true`).
"""

from __future__ import annotations

import getpass
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import slurmctld_run
from cli_run import run
from slurmctld_run import WAIT_SECONDS, Controller, skip_without_slurm, slurmctld, slurmrestd

from fabriccheck.providers.slurm.files import COMMANDS, read_dump

RUNNING_JOB_NODES = "gpu-[2-3]"
DEBIAN = Path(__file__).resolve().parents[1] / "fixtures" / "slurm" / "debian-22.05"


def _wait_for_nodes(controller: Controller, job: str) -> None:
    """Until slurmctld has given `job` its nodes (it schedules on its own loop), at most WAIT_SECONDS."""
    probe = ["squeue", "--noheader", "--jobs", job, "--format=%N"]
    for _ in range(int(WAIT_SECONDS / 0.2)):
        if controller.run(*probe).strip():
            return
        time.sleep(0.2)
    pytest.fail(f"waited {WAIT_SECONDS:g} s for slurmctld to give job {job} its nodes: {controller.log()}")


@pytest.fixture(scope="session")
def controller() -> Iterator[Controller]:
    skip_without_slurm()
    with slurmctld() as started:
        where = str(started.folder)
        started.run("sbatch", f"--chdir={where}", "--hold", "--partition=train", "--nodes=2", "--wrap=true")
        started.run("sbatch", f"--chdir={where}", "--partition=train", f"--nodelist={RUNNING_JOB_NODES}",
                    "--nodes=2", "--wrap=true")  # fmt: skip
        _wait_for_nodes(started, "2")
        yield started


def _report(controller: Controller, *args: str) -> tuple[int, dict[str, Any]]:
    result = run("slurm", *args, "-f", "json", env=controller.env)
    assert result.returncode in (0, 1, 2) and result.stdout, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, report


def _clusters(report: dict[str, Any]) -> dict[str, list[str]]:
    return {c["id"].rsplit(":", 1)[-1]: sorted(c["nodes"]) for c in report["clusters"]}


def _flagged(report: dict[str, Any], rule: str) -> set[tuple[str, str]]:
    found = [f for f in report["findings"] if f["rule"] == rule]
    return {(f["cluster"].rsplit(":", 1)[-1], resource) for f in found for resource in f["resources"]}


def _judged_alike(report: dict[str, Any]) -> None:
    """What the cluster holds comes through, and SLURM101 flags gpu-5 in wide only (solo runs single-node jobs)."""
    clusters = _clusters(report)
    assert clusters["slurm-partition/train"] == ["gpu-1", "gpu-2", "gpu-3", "gpu-4"]
    assert clusters["slurm-partition/wide"] == ["gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5"]
    assert clusters["slurm-job/2"] == ["gpu-2", "gpu-3"]  # CONFIGURING: holds its nodes
    assert "slurm-job/1" not in clusters  # held: no node planned
    assert "spare-1" not in json.dumps(report)  # State=FUTURE: slurmctld does not show it
    assert _flagged(report, "SLURM101") == {("slurm-partition/wide", "gpu-5")}
    assert all(report_cluster["account"] == "fctest" for report_cluster in report["clusters"])  # slurm.conf's name


def test_live_run_reads_the_real_controller(controller: Controller, tmp_path: Path) -> None:
    """`fabriccheck slurm` on a login node of a 22.05 cluster: scontrol's --json fails, sinfo --json and the text of
    scontrol show partitions stand in, and the run is judged as complete as Slurm alone allows."""
    inventory = tmp_path / "inventory.json"
    code, report = _report(controller, "--save-inventory", str(inventory))
    _judged_alike(report)
    assert report["source"] == "slurm live"
    assert report["errors"] == []  # every fact Slurm holds was read: only the cloud's are missing
    saved = json.loads(inventory.read_text())
    groups = {g["name"]: g["nodes"] for g in saved["slurm"]["groups"]}
    assert groups == {"leaf1": ["gpu-1", "gpu-2"], "leaf2": ["gpu-3", "gpu-4"]}  # the spine is no leaf switch
    states = {n["id"]: n["state"] for n in saved["nodes"]}
    assert states["gpu-1"] == "pending"  # IDLE+CLOUD+POWERED_DOWN: what a job would get when it powers up
    assert code == 2  # without --cloud-dump the cloud's rules are not judged: never a pass


def _save_dump(controller: Controller, folder: Path) -> set[str]:
    """Each documented command run as a user runs it in an empty folder; the files it filled (`scontrol show nodes
    --json > nodes.json` leaves an empty nodes.json on 22.05, and the dump is read as it is, with it). The cp lines
    for topology.conf and gres.conf name /etc/slurm: this cluster's files are beside its SLURM_CONF."""
    folder.mkdir()
    for command in COMMANDS.values():
        if command.startswith("cp /etc/slurm/"):
            command = command.replace("/etc/slurm", str(controller.conf.parent))
        subprocess.run(["sh", "-c", command], cwd=folder, env=controller.env, capture_output=True, check=False)
    return {path.name for path in folder.iterdir() if path.stat().st_size > 0}


def test_a_dump_saved_with_the_documented_commands(controller: Controller, tmp_path: Path) -> None:
    """The dump's commands on 22.05: sinfo.json and partitions.txt stand for the --json files scontrol cannot
    write, and --from-dump judges what the live run judges."""
    dump = tmp_path / "dump"
    made = _save_dump(controller, dump)
    assert made == {"sinfo.json", "partitions.txt", "jobs.json", "topology.txt", "slurm.conf", "topology.conf"}
    assert (dump / "nodes.json").stat().st_size == (dump / "partitions.json").stat().st_size == 0
    code, report = _report(controller, "--from-dump", str(dump))
    _judged_alike(report)
    _, live = _report(controller)
    assert report["findings"] == live["findings"]
    assert code == 2


def test_the_real_shapes_read_into_records(controller: Controller, tmp_path: Path) -> None:
    """What each 22.05 file gives the reader: node states with their flags, MaxNodes from the text, job states."""
    dump = tmp_path / "dump"
    _save_dump(controller, dump)
    read = read_dump(dump)
    assert read.cluster == "fctest" and read.topology_plugin == "tree"
    nodes = {n.name: n for n in read.nodes}
    assert sorted(nodes) == ["gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5"]
    assert nodes["gpu-5"].partitions == ["wide", "solo"] and nodes["gpu-5"].gpus == 8
    assert {"IDLE", "CLOUD", "POWERED_DOWN"} <= set(nodes["gpu-1"].states)
    assert read.partitions is not None
    assert {name: p.max_nodes for name, p in read.partitions.items()} == {"train": None, "wide": None, "solo": 1}
    jobs = {job.id: job for job in read.jobs or []}
    assert (jobs["1"].states, jobs["1"].nodes, jobs["1"].node_count) == (["PENDING"], [], 2)
    assert (jobs["2"].states, jobs["2"].nodes) == (["CONFIGURING"], ["gpu-2", "gpu-3"])


def test_slurmrestd_of_22_05_reads_as_the_commands_do(controller: Controller) -> None:
    """`--slurmrestd` against the real 22.05.8 daemon, with the token `scontrol token` prints: it serves API v0.0.38
    only, whose nodes and jobs are the shapes sinfo and squeue print and whose partitions say
    `maximum_nodes_per_job`. The REST API has no topology: SLURM101 is not judged, not passed."""
    said = controller.run("scontrol", "token", f"username={getpass.getuser()}").strip()
    assert said.startswith("SLURM_JWT=")
    with slurmrestd(controller) as url:
        result = run("slurm", "--slurmrestd", url, "-f", "json", env=dict(controller.env, SLURM_JWT=said[10:]))
    assert result.returncode == 2 and result.stdout, result.stderr  # no topology, no cloud: never a pass
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["errors"] == [] and said[10:] not in result.stdout + result.stderr
    clusters = _clusters(report)
    assert clusters["slurm-partition/wide"] == ["gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5"]
    assert clusters["slurm-job/2"] == ["gpu-2", "gpu-3"]
    assert "slurm-partition/solo" not in clusters  # maximum_nodes_per_job 1: single-node jobs, not judged
    assert _flagged(report, "SLURM101") == set()
    wide = next(c for c in report["clusters"] if c["id"].endswith("slurm-partition/wide"))
    assert "SLURM101" in {n["rule"] for n in wide["not_judged"]}


def _shape(folder: Path) -> dict[str, Any]:
    """What a dump's files are made of, values aside: the keys of each node and job, the words of the texts."""
    nodes = json.loads((folder / "sinfo.json").read_text())
    jobs = json.loads((folder / "jobs.json").read_text())
    words = {name: sorted({w.split("=")[0] for w in (folder / name).read_text().split() if "=" in w})
             for name in ("partitions.txt", "topology.txt")}  # fmt: skip
    return {
        "meta": nodes["meta"],
        "node": sorted({key for node in nodes["nodes"] for key in node}),
        "job": sorted({key for job in jobs["jobs"] for key in job}),
        "job_state": sorted({job["job_state"] for job in jobs["jobs"]}),
        **words,
    }


def test_the_captured_fixture_is_what_the_controller_prints(controller: Controller, tmp_path: Path) -> None:
    """fixtures/slurm/debian-22.05 (read by tests/test_slurm_versions.py where Slurm is not installed) has the
    shapes this Slurm prints now: a fixture that drifts from the real output fails here."""
    dump = tmp_path / "dump"
    _save_dump(controller, dump)
    assert _shape(dump) == _shape(DEBIAN)
    for name in ("topology.txt", "topology.conf"):
        assert (dump / name).read_text() == (DEBIAN / name).read_text()


def test_the_right_topology_is_not_flagged(controller: Controller, tmp_path: Path) -> None:
    """The same dump with gpu-5 under a leaf switch of topology.txt: SLURM101 no longer fires (it can pass)."""
    dump = tmp_path / "dump"
    _save_dump(controller, dump)
    text = (dump / "topology.txt").read_text()
    assert "SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=gpu-[3-4]\n" in text  # topo_info.c's line, as printed
    (dump / "topology.txt").write_text(text.replace("Nodes=gpu-[3-4]\n", "Nodes=gpu-[3-5]\n", 1))
    _, report = _report(controller, "--from-dump", str(dump))
    assert _flagged(report, "SLURM101") == set()
    shutil.rmtree(dump)


def test_missing_slurm_skips_here_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without slurmctld the real-controller tests skip with the reason; with REQUIRE_SLURM_TESTS=1 (.ci/run)
    the same absence is a failure, so CI never passes by skipping them."""
    monkeypatch.setattr(slurmctld_run, "_which", lambda name: None if name == "slurmctld" else f"/usr/bin/{name}")
    monkeypatch.delenv(slurmctld_run.REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="slurmctld not installed"):
        skip_without_slurm()
    monkeypatch.setenv(slurmctld_run.REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match="REQUIRE_SLURM_TESTS=1 but slurmctld not installed"):
        skip_without_slurm()
