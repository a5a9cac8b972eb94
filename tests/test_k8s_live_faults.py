"""`fabriccheck k8s` live against a hostile API server (issue 29, items 1, 4, 5, 8 and 9): the real `kubernetes`
client against the replay server on 127.0.0.1 (tests/kube_replay.py), answering lists with what is not the list,
looping continue tokens, resets and stalls, long Retry-After waits; kubeconfigs that would send a credential in
clear text, or hold one that could leak.

Shapes followed: a failed call's body is a metav1.Status (`kind: Status`, `status: Failure`, `reason`, `code`:
kubernetes/apimachinery pkg/apis/meta/v1/types.go); a list answer is a `<Kind>List` with `metadata.continue` when
more pages follow (kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run
from kube_replay import TOKEN, KubeReplay, kubeconfig, serve

from fabriccheck.providers.k8s.role import KINDS
from fabriccheck.sources import retries

pytest.importorskip("kubernetes")

ROOT = Path(__file__).resolve().parents[1]
EKS = ROOT / "fixtures" / "demo" / "k8s" / "eks-train"
NODE = {"kind": "Node", "metadata": {"name": "ip-10-0-1-1"}}
STATUS = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "InternalError", "code": 500}


def _live(replay: KubeReplay, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    with serve(replay) as url:
        config = kubeconfig(tmp_path / "kubeconfig", url)
        return run("k8s", "--kubeconfig", str(config), "-f", "json", *args, env=env)


def _report(result: Any) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _pods_calls(replay: KubeReplay) -> int:
    return sum(1 for r in replay.requests if r.startswith("/api/v1/pods"))


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({}, "it has no items list"),
        ({"kind": "PodList", "items": {}}, "it has no items list"),
        (STATUS, "it is a Status (Failure InternalError 500), not a List of Pod"),
        ({"kind": "NodeList", "items": [NODE]}, "it is a NodeList, not a List of Pod"),
        ({"kind": "List", "items": [NODE]}, "items[0] is a Node, not a Pod"),
        ([], "it has no items list"),  # a JSON array: was an internal error
    ],
    ids=["empty-object", "items-object", "status-under-200", "nodelist", "node-items", "json-array"],
)
def test_an_answer_that_is_not_the_list_is_not_an_empty_cluster(tmp_path: Path, body: Any, said: str) -> None:
    """Was: complete, 0 pods, exit 0. Now the pods list is recorded as not read (BadResponse), exit 2, and every
    other kind was still read and judged as the undamaged run reads it."""
    replay = KubeReplay.from_dump(EKS, bodies={"pods": body})
    result = _live(replay, tmp_path)
    report = _report(result)
    assert result.returncode == 2, result.stderr
    assert result.stderr == ""  # the report says it; no traceback, no internal error
    assert report["complete"] is False
    [error] = report["errors"]
    assert (error["call"], error["code"]) == ("list pods", "BadResponse")
    assert error["message"] == f"list pods: page 1 of the answer is not the pods list: {said}"
    # Nothing else lost: every kind still listed, one call each, and only the pods list is named as not read.
    assert _pods_calls(replay) == 1
    # Every other kind is still listed once, at each version the server is asked for until one is served (the
    # replay serves no DRA kind, so those are asked at v1, v1beta2 and v1beta1): nothing is read twice.
    assert len(replay.requests) == sum(1 + (len(k.fallback) if k.plural not in replay.objects else 0) for k in KINDS)
    assert len(set(replay.requests)) == len(replay.requests)
    assert report["summary"]["nodes"] == 0


def test_the_dump_reader_refuses_the_same_answers(tmp_path: Path) -> None:
    """One check for both readers (dump.list_items): the same Status as pods.json is one line naming the file."""
    folder = tmp_path / "dump"
    folder.mkdir()
    (folder / "nodes.json").write_text((EKS / "nodes.json").read_text())
    (folder / "pods.json").write_text(json.dumps(STATUS))
    line = one_clean_line(run("k8s", "--from-dump", str(folder)))
    assert f"{folder / 'pods.json'}: a Status (Failure InternalError 500), not a List of Pod" in line


def test_a_looping_continue_token_is_stopped(tmp_path: Path) -> None:
    """Was: followed forever (2,304 calls in 120 s). The second page naming the token already followed ends the
    list: recorded, exit 2, two calls."""
    replay = KubeReplay.from_dump(EKS, looping={"pods"})
    result = _live(replay, tmp_path)
    report = _report(result)
    assert result.returncode == 2 and report["complete"] is False
    assert _pods_calls(replay) == 2
    [error] = report["errors"]
    assert error["code"] == "BadResponse"
    assert "continue token 'again' leads back to a page already read (page 2): the list never ends" in error["message"]


def test_a_reset_and_a_stall_are_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: one reset ended the run with no report. A reset, then an answer past the read timeout, then the
    answer: retried with back-off as AWS and GCP retry them, complete, the same verdict as the undamaged run."""
    monkeypatch.setattr(retries, "RETRIES", retries.RetryPolicy(read_timeout=0.3))
    clean = _report(_live(KubeReplay.from_dump(EKS), tmp_path))
    replay = KubeReplay.from_dump(EKS, faults={"pods": ["reset", "stall"]})
    result = _live(replay, tmp_path)
    report = _report(result)
    assert result.returncode == 1, result.stderr
    assert report["complete"] is True and report["summary"]["retries"] == 2
    assert _pods_calls(replay) == 3
    assert report["summary"]["nodes"] == clean["summary"]["nodes"] == 4
    assert [f["rule"] for f in report["findings"]] == [f["rule"] for f in clean["findings"]]


def test_resets_past_the_retries_are_an_incomplete_run_with_a_report(tmp_path: Path) -> None:
    """Eight resets in a row: the pods list is recorded as unreachable with the attempts made, and the kinds after it
    are recorded as not listed (a server that stopped answering is not waited on kind after kind), each by name."""
    replay = KubeReplay.from_dump(EKS, faults={"pods": ["reset"] * retries.RETRIES.max_attempts})
    result = _live(replay, tmp_path)
    report = _report(result)
    assert result.returncode == 2 and report["complete"] is False
    first, *rest = report["errors"]
    assert (first["call"], first["code"]) == ("list pods", "Unreachable")
    assert first["message"].endswith(f"still failing after {retries.RETRIES.max_attempts} attempts")
    assert _pods_calls(replay) == retries.RETRIES.max_attempts
    assert [e["call"] for e in rest] == [f"list {k.plural}" for k in KINDS[2:]]
    assert all("not listed: the API server stopped answering (list pods failed" in e["message"] for e in rest)
    assert len(replay.requests) == 1 + retries.RETRIES.max_attempts  # nodes, then the pods attempts: no more


def test_a_retry_after_past_the_bound_is_not_waited_for(tmp_path: Path) -> None:
    """A server asking for an hour is recorded as throttled at once (one call), not waited for or hammered."""
    replay = KubeReplay.from_dump(EKS, throttle={"pods": 5}, retry_after="3600")
    result = _live(replay, tmp_path)
    report = _report(result)
    assert result.returncode == 2 and report["complete"] is False
    assert _pods_calls(replay) == 1
    [error] = report["errors"]
    assert error["code"] == "Throttled"
    assert "Retry-After 3600 s is longer than the 60 s a run waits" in error["message"]


def _write_kubeconfig(path: Path, server: Any, token: str = TOKEN) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    path.write_text(json.dumps(doc))
    return path


def test_plain_http_to_another_host_is_refused_before_any_request(tmp_path: Path) -> None:
    """The token would cross the network in clear text: refused as every cloud's --endpoint-url is
    (endpoints.check_endpoint_url), naming the kubeconfig's server with its password masked."""
    config = _write_kubeconfig(tmp_path / "kc", "http://admin:PASSWORD@192.0.2.10:6443")
    result = run("k8s", "--kubeconfig", str(config))
    line = one_clean_line(result)
    assert f"kubeconfig {config}: server http://***@192.0.2.10:6443: plain http:// would send" in line
    assert "PASSWORD" not in result.stderr + result.stdout and TOKEN not in result.stderr + result.stdout


def test_a_password_in_the_server_url_is_never_printed_or_saved(tmp_path: Path) -> None:
    """Loopback is allowed (an emulator, kubectl proxy); its URL's password is masked in the report header, the
    JSON report and the saved inventory alike."""
    replay = KubeReplay.from_dump(EKS)
    saved = tmp_path / "inventory.json"
    with serve(replay) as url:
        server = url.replace("http://", "http://admin:PASSWORD@")
        config = _write_kubeconfig(tmp_path / "kc", server)
        text = run("k8s", "--kubeconfig", str(config), "--save-inventory", str(saved))
        as_json = run("k8s", "--kubeconfig", str(config), "-f", "json")
    assert text.returncode == as_json.returncode == 1
    assert "http://***@127.0.0.1:" in text.stdout
    for output in (text.stdout, text.stderr, as_json.stdout, saved.read_text()):
        assert "PASSWORD" not in output and TOKEN not in output


def test_a_token_that_is_no_header_is_one_line_even_when_debugging(tmp_path: Path) -> None:
    """Was: an internal error whose FABRICCHECK_DEBUG traceback quoted the whole Authorization header."""
    replay = KubeReplay.from_dump(EKS)
    with serve(replay) as url:
        config = _write_kubeconfig(tmp_path / "kc", url, token="s3cr3t-t0ken\nInjected: yes")
        import os

        result = run("k8s", "--kubeconfig", str(config), env={**os.environ, "FABRICCHECK_DEBUG": "1"})
    line = one_clean_line(result)
    assert line == f"fabriccheck: error: kubeconfig {config}: the user's token holds a line break or control character"
    assert "s3cr3t" not in result.stdout + result.stderr
    assert replay.requests == []  # refused before any request


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("clusters: [\n", "not valid"),
        (None, "rstrip"),  # server: 5, a number where the URL belongs
    ],
    ids=["yaml", "server-number"],
)
def test_a_malformed_kubeconfig_is_one_line(tmp_path: Path, text: str | None, said: str) -> None:
    """Were internal errors: YAML the client's loader cannot parse, a server that is not a string."""
    path = tmp_path / "kc"
    if text is None:
        _write_kubeconfig(path, 5)
    else:
        path.write_text(text)
    line = one_clean_line(run("k8s", "--kubeconfig", str(path)))
    assert line.startswith(f"fabriccheck: error: kubeconfig {path}: ")
    assert "internal error" not in line


def test_the_debug_traceback_masks_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """FABRICCHECK_DEBUG=1 shows an internal error's traceback: whatever credential its text quotes (a refused
    Authorization header, a URL's password) is masked there as in every error line (fabriccheck.redaction.redact)."""
    import os

    from fabriccheck.providers.k8s import role

    def broken() -> str:
        raise ValueError("Invalid header value b'Bearer s3cr3t-t0ken' for https://admin:PASSWORD@10.0.0.1")

    monkeypatch.setattr(role, "cluster_role_yaml", broken)
    result = run("k8s", "--print-role", env={**os.environ, "FABRICCHECK_DEBUG": "1"})
    assert result.returncode == 2
    assert "Traceback (most recent call last)" in result.stderr
    assert "ValueError: Invalid header value b'Bearer ***' for https://***@10.0.0.1" in result.stderr
    assert "s3cr3t" not in result.stderr and "PASSWORD" not in result.stderr


def test_a_failing_credential_plugin_is_one_line(tmp_path: Path) -> None:
    """Was two lines (the client's own `ERROR:root:` log, then a refused connection or a 401): an exec credential
    plugin that fails (here a stand-in for `aws eks get-token` whose SSO session expired) is one line in its words,
    before any request."""
    plugin = tmp_path / "get-token"
    plugin.write_text("#!/bin/sh\necho 'Error loading SSO Token: Token for sso expired' >&2\nexit 255\n")
    plugin.chmod(0o755)
    replay = KubeReplay.from_dump(EKS)
    with serve(replay) as url:
        config = _write_kubeconfig(tmp_path / "kc", url)
        doc = json.loads(config.read_text())
        doc["users"][0]["user"] = {
            "exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(plugin)}
        }
        config.write_text(json.dumps(doc))
        line = one_clean_line(run("k8s", "--kubeconfig", str(config)))
    assert line.startswith(f"fabriccheck: error: kubeconfig {config}: the user's credential plugin failed: "), line
    assert "exit" in line or "SSO" in line
    assert replay.requests == []
