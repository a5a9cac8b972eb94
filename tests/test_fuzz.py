"""Damaged input never breaks the gate (issue 18, "Tests"): a seeded mutator damages one real input at a time and
the command runs on it (in this process: `fabriccheck.cli.main`, as the console script calls it).

The inputs are the project's own real-shaped files: the demo dumps of the three clouds (fixtures/demo/<cloud>,
made by tools/build_demo*.py from the clouds' documented answer shapes), the demo Terraform plans
(fixtures/demo/plans), a saved inventory of the AWS demo, the NCCL logs and nccl-tests tables
(tests/fixtures/nccl, sources in its SOURCES.md), and a config, a waivers and a baseline file for the AWS
demo. Each damage is one of: a byte flipped, bytes inserted or cut, the file truncated; for JSON, one value
somewhere replaced by another type or an extreme (null, 2^64, 1e308, a date that does not exist, an escape
sequence, deep nesting), a key dropped, renamed or wrapped; for text, a line dropped, repeated or its numbers
made huge.

Invariants, whatever the damage:
- never "internal error" or a traceback; the exit code is 0, 1 or 2;
- never exit 0 with a report that lost nodes, findings or judged rules against the undamaged input (a run the
  damage turned green must have judged everything the undamaged one did, unless its gate says it was told to
  judge less).

The seed is fixed; FC_FUZZ_EXAMPLES (per input, default 10) runs more, FC_FUZZ_SEED another seed (not
FABRICCHECK_*: fabriccheck refuses variables of its prefix it does not know). A failure names the input, the case
and the damage, and keeps the damaged file for rerunning.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import io
import json
import os
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabriccheck.cli import main

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
NCCL = ROOT / "tests" / "fixtures" / "nccl"
SEED = int(os.environ.get("FC_FUZZ_SEED", "20261118"))
EXAMPLES = int(os.environ.get("FC_FUZZ_EXAMPLES", "10"))

CONFIG = 'fail-on = "error"\nselect = ["AWS1"]\n[severity]\nAWS121 = "warning"\n[roles]\n"*canary*" = "ignore"\n'
WAIVERS = (
    "waivers:\n"
    "  - rule: AWS110\n"
    '    resources: ["aws:111122223333:us-east-1:auto-scaling-group/bert-ft"]\n'
    '    reason: "single-tenant experiment"\n'
    "    expires: 2099-01-31\n"
    "  - category: placement\n"
    '    resources: ["*trn*"]\n'
    '    reason: "Trainium: its own placement"\n'
)


@dataclass(frozen=True)
class Target:
    """One input kind: the files to damage (in a copy of `folder`, or alone), and the command to run on it."""

    name: str
    folder: Path | None  # copied whole; one of its files is damaged
    files: Callable[[Path], list[Path]]  # the files that may be damaged (in the copy)
    command: Callable[[Path, Path], list[str]]  # (the copy or the damaged file, the case folder) -> arguments
    report: bool = True  # a scan's JSON report, compared with the undamaged input's
    live: bool = False  # `fabriccheck k8s` live: the damaged file is what the API server answers its kind's list with


def _json_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json"))


def _scan(cloud: str) -> Target:
    return Target(
        cloud, DEMO / cloud, _json_files, lambda copy_, case: [cloud, "--from-dump", str(copy_), "-f", "json"]
    )


def _on_aws_demo(*options: str) -> Callable[[Path, Path], list[str]]:
    """The AWS demo scanned with `options` (PATH: the damaged file)."""
    return lambda path, case: [
        "aws",
        "--from-dump",
        str(DEMO / "aws"),
        *(str(path) if o == "PATH" else o for o in options),
    ]


def _on(command: str) -> Callable[[Path, Path], list[str]]:
    return lambda path, case: [command, str(path), "-f", "json"]


TARGETS = [
    _scan("aws"),
    _scan("gcp"),
    _scan("azure"),
    Target("plan", DEMO / "plans", lambda f: sorted(f.glob("*.json")), _on("plan")),
    Target("inventory", None, lambda f: [f / "inventory.json"], _on("check")),
    Target("config", None, lambda f: [f / "fabriccheck.toml"], _on_aws_demo("-f", "json")),  # read from the case folder
    Target("waivers", None, lambda f: [f / "waivers.yaml"], _on_aws_demo("--waivers", "PATH", "-f", "json")),
    Target("baseline", None, lambda f: [f / "baseline.json"], _on_aws_demo("--baseline", "PATH", "-f", "json")),
    Target("nccl-log", NCCL, lambda f: sorted(f.glob("log_*.txt")), _on("nccl-log")),
    Target("nccl-tests", NCCL, lambda f: sorted(f.glob("tests_*.txt")), _on("nccl-tests")),
    # Kubernetes (issue 29): the demo clusters' kubectl dumps; manifests before apply on the EKS demo's nodes; the
    # live reader, the real client against the replay API server serving a damaged answer for one kind (`live`).
    Target("k8s", DEMO / "k8s", _json_files, lambda copy_, case: ["k8s", "--from-dump", str(copy_), "-f", "json"]),
    Target(
        "k8s-manifests",
        ROOT / "fixtures" / "k8s" / "manifests",
        lambda f: sorted(f.glob("*.yaml")),
        lambda path, case: [
            "k8s",
            "--manifests",
            str(path),
            "--nodes-from",
            str(DEMO / "k8s" / "eks-train"),
            "-f",
            "json",
        ],
    ),
    Target("k8s-live", DEMO / "k8s" / "eks-train", _json_files, lambda path, case: ["-f", "json"], live=True),
]


# ---------------------------------------------------------------------------------------------- damage

VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**64,
    1e308,
    "",
    "x",
    "\x1b[2J\nfabriccheck: all clear",
    "2027-02-30",
    [],
    {},
    [None],
    {"": None},
    "A" * 5_000,
    "@octocat",
]


def _paths(value: Any, at: tuple[Any, ...] = (), found: list[tuple[Any, ...]] | None = None) -> list[tuple[Any, ...]]:
    """Every path into a JSON document (lists: their first three items)."""
    found = [] if found is None else found
    items: list[tuple[Any, Any]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value[:3]))
    for key, inner in items:
        found.append((*at, key))
        if len(at) < 12:
            _paths(inner, (*at, key), found)
    return found


def _damage_json(rng: random.Random, data: bytes) -> tuple[bytes, str] | None:
    try:
        document = json.loads(data)
    except ValueError:
        return None
    if rng.random() < 0.1:  # the document itself: another value, or its list under a key the reader does not read
        # (never an empty list: that is a complete answer of an empty estate, not damage)
        root = rng.choice([*VALUES[:4], {}, {"items": document}, {"Items": document}, {"value": {}}])
        return json.dumps(root, indent=2).encode(), f"the document replaced by {json.dumps(root)[:40]}"
    paths = _paths(document)
    if not paths:
        return None
    # A depth first, then a path at it: the few paths near the top (the answer's list itself, an item's own
    # fields) are damaged as often as the many deep ones.
    depth = rng.choice(sorted({len(p) for p in paths}))
    path = rng.choice([p for p in paths if len(p) == depth])
    damaged = copy.deepcopy(document)
    parent = damaged
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    op = rng.choice(["replace", "replace", "replace", "drop", "rename", "wrap", "nest"])
    if op == "replace":
        value = rng.choice(VALUES)
        parent[key] = copy.deepcopy(value)
        what = f"{list(path)} = {json.dumps(value)[:40]}"
    elif op == "drop" and isinstance(parent, dict):
        del parent[key]
        what = f"{list(path)} dropped"
    elif op == "rename" and isinstance(parent, dict):
        parent[key.upper() if key != key.upper() else key.lower() + "_"] = parent.pop(key)
        what = f"{list(path)} renamed"
    elif op == "wrap":
        parent[key] = [parent[key]]
        what = f"{list(path)} wrapped in a list"
    else:
        parent[key] = _DEEP_MARK  # written in as text: building it in Python would itself recurse too deep
        what = f"{list(path)} = a list 1,000 deep"
    text = json.dumps(damaged, indent=rng.choice([2, None])).replace(json.dumps(_DEEP_MARK), _DEEP)
    return text.encode(), what


_DEEP_MARK = "\u2063deep\u2063"
_DEEP = "[" * 1_000 + "]" * 1_000


def _damage_text(rng: random.Random, data: bytes) -> tuple[bytes, str] | None:
    lines = data.splitlines(keepends=True)
    if not lines:
        return None
    index = rng.randrange(len(lines))
    op = rng.choice(["drop", "repeat", "numbers", "control"])
    if op == "drop":
        del lines[index]
    elif op == "repeat":
        lines.insert(index, lines[index] * rng.choice([2, 50]))
    elif op == "numbers":
        huge = rng.choice([b"18446744073709551616", b"-1", b"1e308", b"nan", b"99999999"])
        lines[index] = b"".join(huge if part.isdigit() else part for part in _split_digits(lines[index]))
    else:
        junk = rng.choice([b"\x1b[2J", b"\x00", b"\r", b"\xff\xfe", b"\xc3("])
        lines[index] = lines[index][:5] + junk + lines[index][5:]
    return b"".join(lines), f"line {index + 1}: {op}"


def _split_digits(line: bytes) -> list[bytes]:
    parts: list[bytes] = []
    for char in line:
        byte = bytes([char])
        if parts and parts[-1].isdigit() == byte.isdigit():
            parts[-1] += byte
        else:
            parts.append(byte)
    return parts


def _damage_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    at = rng.randrange(len(data) + 1)
    op = rng.choice(["truncate", "flip", "insert", "cut"])
    if op == "truncate":
        return data[:at], f"truncated at byte {at}"
    if op == "flip" and data:
        at = min(at, len(data) - 1)
        return data[:at] + bytes([data[at] ^ rng.choice([1, 0x20, 0x80, 0xFF])]) + data[at + 1 :], f"byte {at} flipped"
    if op == "insert":
        junk = rng.choice([b"\x00", b"\xff\xfe", b"\x1b[2J", b"{", b"]", b",", b'"', b"\n"])
        return data[:at] + junk + data[at:], f"{junk!r} inserted at byte {at}"
    end = min(len(data), at + rng.randrange(1, 200))
    return data[:at] + data[end:], f"bytes {at}-{end} cut"


def damage(rng: random.Random, path: Path) -> str:
    """Damage the file at `path` once; what was done, in words."""
    data = path.read_bytes()
    structured = _damage_json if path.suffix == ".json" else _damage_text
    done = structured(rng, data) if rng.random() < 0.7 else None
    data, what = done if done is not None else _damage_bytes(rng, data)
    path.write_bytes(data)
    return what


# ---------------------------------------------------------------------------------------------- running


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str

    def report(self) -> dict[str, Any] | None:
        try:
            loaded = json.loads(self.stdout)
        except ValueError:
            return None
        return loaded if isinstance(loaded, dict) else None


def _run_live(target: Target, path: Path, cwd: Path) -> Outcome:
    """`fabriccheck k8s` live against the replay API server (tests/kube_replay.py) serving the undamaged cluster,
    except for the damaged file's kind: its bytes, as they are, are the answer to every list call of that kind."""
    from kube_replay import KubeReplay, kubeconfig, serve

    assert target.folder is not None
    replay = KubeReplay.from_dump(target.folder, bodies={path.stem: path.read_bytes()})
    with serve(replay) as url:
        config = kubeconfig(cwd / "kubeconfig", url)
        return _run(["k8s", "--kubeconfig", str(config), *target.command(path, cwd)], cwd)


def _outcome(target: Target, subject: Path, cwd: Path) -> Outcome:
    return _run_live(target, subject, cwd) if target.live else _run(target.command(subject, cwd), cwd)


def _run(args: list[str], cwd: Path) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    gc.unfreeze()  # the dump readers freeze what they parsed (a process reads one dump; this one reads hundreds)
    return Outcome(code, out.getvalue(), err.getvalue())


def _another_readable_log(target: Target, what: str) -> bool:
    """Damage inside a log or table that leaves another log a run could have written: whole lines taken out, a
    stretch cut out, junk inside a line (real logs hold lines two ranks wrote over each other, which the reader
    skips). Nothing tells a reader what such lines said, so losing it is no lie of the gate. A file cut short is
    told (it ends mid-line: incomplete), and bandwidths no fabric gives are refused or flagged; both are checked.
    (In a log, numbers made huge or negative garble the process prefix: another unreadable line.)"""
    kept = what.startswith("truncated") or (target.name == "nccl-tests" and what.endswith(": numbers"))
    return target.name.startswith("nccl") and not kept


def _another_manifest(target: Target, what: str, victim: Path) -> bool:
    """A manifest with a line taken out, or its tail cut off, that still reads as YAML is another manifest a person
    could have written (a PyTorchJob without its `replicas: 2` line runs one worker; one cut after a complete
    container asks what that container asks): nothing tells a reader what was there. Every other damage is held to
    "never green on less", and so is a cut that leaves a container, a workload or a value incomplete (checked)."""
    if target.name != "k8s-manifests" or not (what.startswith("truncated") or what.endswith(": drop")):
        return False
    try:
        list(yaml.safe_load_all(victim.read_bytes()))
    except yaml.YAMLError:
        return False
    return True


def _size(value: Any) -> int:
    """A count, or the length of a list."""
    return value if isinstance(value, int) else len(value or ())


def _job(report: dict[str, Any]) -> dict[str, Any]:
    """What an evidence report's job showed: its nodes, a log's processes, nccl-tests' runs (none: nothing)."""
    if not report["clusters"]:
        return {}
    evidence = report["clusters"][0]["evidence"]
    log = evidence["log"] or {}
    return {"nodes": log.get("nodes"), "processes": log.get("processes"), "runs": evidence["runs"]}


def _lost_evidence(report: dict[str, Any], base: dict[str, Any]) -> list[str]:
    """What a green evidence report judged less than the undamaged file's: findings, nodes, processes or runs."""
    lost = []
    if len(report["findings"]) < len(base["findings"]):
        lost.append(f"findings {len(report['findings'])} < {len(base['findings'])}")
    had, has = _job(base), _job(report)
    for key in ("nodes", "processes", "runs"):
        before, after = had.get(key), has.get(key)
        if before is not None and _size(after) < _size(before):
            lost.append(f"{key} {_size(after)} < {_size(before)}")
    return lost


def _lost(report: dict[str, Any], base: dict[str, Any]) -> list[str]:
    """What a green report judged less than the undamaged input's (what its gate was told to leave out aside)."""
    if base.get("evidence"):
        return _lost_evidence(report, base)
    lost = []
    if report["summary"]["nodes"] < base["summary"]["nodes"]:
        lost.append(f"nodes {report['summary']['nodes']} < {base['summary']['nodes']}")
    if len(report["findings"]) < len(base["findings"]):
        lost.append(f"findings {len(report['findings'])} < {len(base['findings'])}")
    gate = report.get("gate") or {}
    told = any(
        (gate.get("settings", {}).get(name) or {}).get("source", "default") != "default"
        for name in ("select", "ignore", "roles", "severity", "rules-dir")
    )
    missing = sorted(set(base["rules"]) - set(report["rules"]))
    if missing and not told:
        lost.append(f"rules not judged: {', '.join(missing[:5])}")
    return lost


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The undamaged inputs that are not fixtures of the repository: made once, from the AWS demo."""
    folder = tmp_path_factory.mktemp("inputs")
    scan = ["aws", "--from-dump", str(DEMO / "aws")]
    assert _run([*scan, "--save-inventory", str(folder / "inventory.json")], folder).code == 1
    assert _run([*scan, "--write-baseline", str(folder / "baseline.json")], folder).code == 0
    (folder / "fabriccheck.toml").write_text(CONFIG)
    (folder / "waivers.yaml").write_text(WAIVERS)
    return folder


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_damaged_input_never_breaks_the_gate(target: Target, inputs: Path, tmp_path: Path) -> None:
    rng = random.Random(f"{SEED}:{target.name}")
    source = target.folder or inputs
    candidates = [p.relative_to(source) for p in target.files(source)]
    assert candidates, target.name
    failures: list[str] = []
    bases: dict[Path, dict[str, Any] | None] = {}
    for case in range(EXAMPLES):
        folder = tmp_path / f"case{case}"
        shutil.copytree(source, folder)
        relative = rng.choice(candidates)
        victim = folder / relative
        subject = folder if target.folder is not None and target.name in ("aws", "gcp", "azure", "k8s") else victim
        if relative not in bases and target.report:  # the undamaged input's report, to compare with
            bases[relative] = _outcome(target, subject, folder).report()
        what = damage(rng, victim)
        outcome = _outcome(target, subject, folder)
        where = f"{target.name} case {case}: {relative}: {what} (kept in {victim})"
        if "internal error" in outcome.stderr or "Traceback" in outcome.stderr:
            failures.append(f"{where}: {outcome.stderr.strip()[:300]}")
        elif outcome.code not in (0, 1, 2):
            failures.append(f"{where}: exit {outcome.code}")
        elif (
            outcome.code == 0
            and target.report
            and not _another_readable_log(target, what)
            and not _another_manifest(target, what, victim)
        ):
            report, base = outcome.report(), bases[relative]
            lost = _lost(report, base) if report is not None and base is not None else ["no JSON report"]
            if lost:
                failures.append(f"{where}: exit 0, but {'; '.join(lost)}")
        if not failures or not failures[-1].startswith(where):
            shutil.rmtree(folder)  # keep only the damaged inputs that broke something
    assert not failures, "\n".join(failures)
