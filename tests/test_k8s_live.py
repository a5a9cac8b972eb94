"""`fabriccheck k8s` live: the real `kubernetes` client against an API server on 127.0.0.1 (tests/kube_replay.py)
serving the fixture clusters' objects, with paging, a forbidden namespace, throttling then success, a dead
endpoint and a bad kubeconfig."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run
from kube_replay import KubeReplay, kubeconfig, serve

from fabriccheck.providers.k8s.role import KINDS

pytest.importorskip("kubernetes")

ROOT = Path(__file__).resolve().parents[1]
EKS = ROOT / "fixtures" / "demo" / "k8s" / "eks-train"


def _live(replay: KubeReplay, tmp_path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    with serve(replay) as url:
        config = kubeconfig(tmp_path / "kubeconfig", url)
        result = run("k8s", "--kubeconfig", str(config), "-f", "json", *args)
    report = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.returncode, report, result.stderr


def test_live_judges_as_the_dump_does(tmp_path: Path) -> None:
    replay = KubeReplay.from_dump(EKS)
    code, report, stderr = _live(replay, tmp_path)
    dumped = json.loads(run("k8s", "--from-dump", str(EKS), "-f", "json").stdout)
    assert code == 1, stderr
    assert report["complete"] is True
    assert {(f["rule"], tuple(f["resources"])) for f in report["findings"]} == {
        (f["rule"], tuple(f["resources"])) for f in dumped["findings"]
    }
    assert [c["status"] for c in report["clusters"]] == [c["status"] for c in dumped["clusters"]]
    # The context names the cluster, as a dump's folder does.
    assert {c["account"] for c in report["clusters"]} == {"eks-train"}
    # Only list calls (GET), one per kind: pods.json has five pods, one page each at the page size.
    assert all("/watch" not in r for r in replay.requests)
    assert sum(1 for r in replay.requests if r.startswith("/api/v1/pods")) == 1
    # One list call per kind, whatever the pod count; a DRA kind not installed is asked at each of its versions.
    assert len(replay.requests) == sum(1 + (len(k.fallback) if k.plural not in replay.objects else 0) for k in KINDS)


def test_paging_follows_continue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fabriccheck.providers.k8s import collect

    monkeypatch.setattr(collect, "PAGE", 2)  # five pods: three pages
    replay = KubeReplay.from_dump(EKS)
    code, report, stderr = _live(replay, tmp_path)
    assert code == 1, stderr
    pages = [r for r in replay.requests if r.startswith("/api/v1/pods")]
    assert len(pages) == 3 and "continue=2" in pages[1] and "continue=4" in pages[2]
    assert report["summary"]["nodes"] == 4  # every GPU pod of every page


def test_a_forbidden_namespace_is_recorded_with_the_rule_it_needed(tmp_path: Path) -> None:
    replay = KubeReplay.from_dump(EKS, forbidden_namespaces={"secret-team"})
    code, report, _ = _live(replay, tmp_path, "--namespace", "default", "--namespace", "secret-team")
    assert code == 2  # incomplete: a gate that could not see must not pass
    assert report["complete"] is False
    errors = [e for e in report["errors"] if "secret-team" in e["call"]]
    assert errors and all(e["code"] == "AccessDenied" for e in errors)  # as every cloud names a denial
    assert any(e["permission"] == 'apiGroups: [""], resources: [pods], verbs: [list]' for e in errors)
    # The allowed namespace was still read and judged.
    assert any(f["rule"] == "K8S101" for f in report["findings"])


def test_throttled_then_answered(tmp_path: Path) -> None:
    replay = KubeReplay.from_dump(EKS, throttle={"pods": 2, "nodes": 1})
    code, report, stderr = _live(replay, tmp_path)
    assert code == 1, stderr
    assert report["complete"] is True
    assert sum(1 for r in replay.requests if r.startswith("/api/v1/pods")) == 3
    assert report["summary"]["retries"] == 3


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_dead_endpoint_is_one_line(tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{_dead_port()}")
    line = one_clean_line(run("k8s", "--kubeconfig", str(config)))
    assert "Kubernetes API server http://127.0.0.1:" in line and "unreachable" in line


def test_bad_kubeconfig_and_context_are_one_line(tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:9")
    assert "--context nope: no such context" in one_clean_line(
        run("k8s", "--kubeconfig", str(config), "--context", "nope")
    )
    broken = tmp_path / "broken"
    broken.write_text("{]")
    assert str(broken) in one_clean_line(run("k8s", "--kubeconfig", str(broken)))
    assert "kubeconfig" in one_clean_line(run("k8s"))  # KUBECONFIG is empty in the tests


def test_help_does_not_import_the_client() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, contextlib, io\n"
        "from fabriccheck.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['k8s', '--help'])\n"
        "print('kubernetes' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_the_python_api_runs_live_with_namespaces_as_scopes(tmp_path: Path) -> None:
    from fabriccheck.api import Live, audit

    replay = KubeReplay.from_dump(EKS)
    with serve(replay) as url:
        config = kubeconfig(tmp_path / "kubeconfig", url)
        report = audit("k8s", Live("default", kubeconfig=str(config)))
    assert report.complete and {f.rule for f in report.findings} == {"K8S101"}
    assert any("/namespaces/default/pods" in r for r in replay.requests)


def test_without_the_client_a_live_run_names_the_extra(tmp_path: Path) -> None:
    import subprocess
    import sys

    probe = (
        "import sys; sys.modules['kubernetes'] = None\n"
        "from fabriccheck.cli import main\n"
        "sys.exit(main(['k8s']))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip().endswith("needs the Kubernetes extra for a live run: pip install 'fabriccheck[k8s]'")
    assert len(out.stderr.strip().splitlines()) == 1


def test_the_collector_calls_only_the_clients_public_list_methods() -> None:
    """The collector drove ApiClient.call_api with the keyword arguments of the client's older generator, which
    kubernetes 37 (regenerated) no longer takes: every live run became an internal error, so the extra was pinned
    below 37. It now calls the typed list methods (CoreV1Api, CustomObjectsApi) only, with the options those
    methods document, and the extra has no upper bound (the live tests here pass on 36 and on 37.0.2)."""
    import ast
    import tomllib

    import fabriccheck.providers.k8s.collect as collect

    tree = ast.parse(Path(collect.__file__).read_text(encoding="utf-8"))
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    of_client = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "client"
    }
    assert "call_api" not in used
    assert of_client <= {"Configuration", "ApiClient", "CoreV1Api", "CustomObjectsApi"}, of_client
    pyproject = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    (requirement,) = pyproject["project"]["optional-dependencies"]["k8s"]
    assert requirement.startswith("kubernetes>=") and "<" not in requirement, requirement
