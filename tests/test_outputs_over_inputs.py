"""No output of any command is written over a file it reads (issue 29 item 7; gate.check_outputs for the scanning
commands, gate.check_output_reads for diff and estimate).

Each case names the output over an input and checks the one line, exit 2, and that every input is byte for byte as
it was (a failed evidence run writes a report of its failure in json: never over an input either)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_run import one_clean_line, run

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
MANIFEST = ROOT / "fixtures" / "k8s" / "manifests" / "nccl-tests-mpijob.yaml"
NCCL_LOG = ROOT / "tests" / "fixtures" / "nccl" / "log_ib_2.4.7_two_hosts.txt"


def _files(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    """A folder holding every kind of input the cases read: manifests, a nodes dump folder, two reports, an NCCL
    log, a waivers file, a kubeconfig."""
    shutil.copy(MANIFEST, tmp_path / "job.yaml")
    (tmp_path / "manifests").mkdir()
    shutil.copy(MANIFEST, tmp_path / "manifests" / "job.yaml")
    shutil.copytree(DEMO / "k8s" / "eks-train", tmp_path / "nodes")
    shutil.copy(NCCL_LOG, tmp_path / "log.txt")
    (tmp_path / "waivers.yaml").write_text("waivers: []\n")
    assert run("demo", "-f", "json", "-o", str(tmp_path / "old.json")).returncode == 0
    assert run("demo", "-f", "json", "-o", str(tmp_path / "new.json")).returncode == 0
    return tmp_path


MANIFESTS = ["k8s", "--manifests", "job.yaml", "--nodes-from", "nodes"]
CASES = {
    "-o onto a --manifests file": (
        [*MANIFESTS, "-f", "json", "-o", "job.yaml"],
        "--output job.yaml is a manifest being judged (--manifests): write the report elsewhere",
    ),
    "--save-inventory onto a --manifests file": (
        [*MANIFESTS, "--save-inventory", "job.yaml"],
        "--save-inventory job.yaml is a manifest being judged (--manifests): write the inventory elsewhere",
    ),
    "-o onto a file of a --manifests folder": (
        ["k8s", "--manifests", "manifests", "--nodes-from", "nodes", "-f", "json", "-o", "manifests/job.yaml"],
        "--output manifests/job.yaml is a manifest being judged (--manifests): write the report elsewhere",
    ),
    "-o onto a --nodes-from file": (
        [*MANIFESTS, "-o", "nodes/nodes.json"],
        "--output nodes/nodes.json is a file in the nodes' dump folder being read (--nodes-from): write the "
        "report elsewhere",
    ),
    "--write-baseline onto a --nodes-from file": (
        [*MANIFESTS, "--write-baseline", "nodes/pods.json"],
        "--write-baseline nodes/pods.json is a file in the nodes' dump folder being read (--nodes-from): write the "
        "baseline elsewhere",
    ),
    "-o onto a --kubeconfig": (
        ["k8s", "--kubeconfig", "waivers.yaml", "-f", "json", "-o", "waivers.yaml"],  # refused before any call
        "--output waivers.yaml is the kubeconfig being read (--kubeconfig): write the report elsewhere",
    ),
    "diff -o OLD": (
        ["diff", "old.json", "new.json", "-o", "old.json"],
        "--output old.json is the earlier report (OLD): write it elsewhere",
    ),
    "diff -o NEW": (
        ["diff", "old.json", "new.json", "-f", "json", "-o", "new.json"],
        "--output new.json is the later report (NEW): write it elsewhere",
    ),
    "estimate -o --calibrate": (
        ["estimate", "--nodes", "4", "--instance-type", "p5.48xlarge", "--calibrate", "log.txt", "-o", "log.txt"],
        "--output log.txt is the nccl-tests output being read (--calibrate): write it elsewhere",
    ),
    "nccl-log -f json -o --waivers": (
        ["nccl-log", "log.txt", "--waivers", "waivers.yaml", "-f", "json", "-o", "waivers.yaml"],
        "--output waivers.yaml is the waivers file being read (--waivers): write the report elsewhere",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_output_over_an_input_is_refused_and_every_input_is_kept(inputs: Path, case: str) -> None:
    args, says = CASES[case]
    before = _files(inputs)
    assert one_clean_line(run(*args, cwd=inputs)) == f"fabriccheck: error: {says}"
    assert _files(inputs) == before  # nothing lost or overwritten, nothing added


def test_the_same_outputs_beside_the_inputs_are_written(inputs: Path) -> None:
    """The check refuses only what would land on an input: a new file beside the manifests is written."""
    result = run(*MANIFESTS, "-f", "json", "-o", "report.json", cwd=inputs)
    assert result.returncode in (0, 1), result.stderr
    assert (inputs / "report.json").read_bytes().startswith(b"{")
    result = run("diff", "old.json", "new.json", "-o", "changes.txt", cwd=inputs)
    assert result.returncode == 0, result.stderr
    assert (inputs / "changes.txt").read_text()
