"""The demo's JSON report, held against the one recorded before accounts were part of every key. Since then
the report may add scope (an `account` on findings, clusters and errors, and the account in cluster ids) and
the additive fields that say what was judged (a cluster's `status`, `complete` and `not_judged`, `skipped_clusters`,
and their counts in the summary), a finding's `confidence`, and the penalty of clusters whose peers cannot reach
each other (priced as a TCP slowdown before, now "cannot run": every GPU-hour lost), and nothing else: a change
to a verdict, a message or another slowdown shows here. The cost of a slowdown changed on purpose (issue 17):
the extra GPU-hours, GPUs x 24 x (slowdown - 1), claimed more than a cluster has; what a slowdown loses is
1 - 1/slowdown of what is paid for. The penalty model's figures changed on purpose too (issue 22: GPUDirect off as
a host-staged path, NCCL's socket transport, the step model's SM overhead): a cluster's slowdown, step seconds,
inter-node bandwidths and the reason that quotes them are held against tests/snapshots/demo-penalties.json, which
`python tests/test_demo_snapshot.py --penalties` rewrites once the new figures are checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fabriccheck import flow
from fabriccheck.providers.aws.dump import load_dump
from fabriccheck.reports import render

ROOT = Path(__file__).resolve().parent.parent
BEFORE = Path(__file__).parent / "snapshots" / "demo-report-before-scope.json"
PENALTIES = Path(__file__).parent / "snapshots" / "demo-penalties.json"
# Rules added since, which the report lists among those it ran (issue 22: UltraServers spread over NVLink domains).
RULES_SINCE = ("AWS160",)
# The penalty model's own figures (issue 22 changed them): held against PENALTIES instead of BEFORE.
# Issue 32 adds the workload priced: a named workload that does not fit a cluster's GPUs is priced as one that does.
MODEL_FIGURES = (
    "slowdown",
    "healthy_step_seconds",
    "degraded_step_seconds",
    "inter_node_gbytes_per_s",
    "reason",
    "workload",
    "extrapolated",  # issue 32: the extrapolated figure a price rests on (the per-GPU NIC cap), said beside it
)
MODEL_FIGURES_SINCE = ("extrapolated",)
DEMO_ACCOUNT = "111122223333"


def _demo_report() -> dict[str, Any]:
    report = flow.run(load_dump(ROOT / "fixtures" / "demo" / "aws"), flow.Options())
    loaded: dict[str, Any] = json.loads(render(report, "json"))
    return loaded


ADDED_SINCE = {
    "report": (
        "skipped_clusters",
        "waivers",
        "baseline",
        "duration_seconds",
        "api_calls",
        "locations",
        "scopes",
        "gate",
        "trend",  # what changed since --previous (None without it)
        "scanned",  # the scopes the run read facts of (what --previous and diff compare within)
        "nodes_not_reported",  # the nodes summary.nodes_not_in_reported_clusters counts, named (issue 30 item 8)
        "evidence",  # the evidence an nccl-log or nccl-tests report judged (None for an audit; issue 30 item 3)
    ),
    # cloud_instances, cloud_clusters: a k8s workload's nodes as instances of the clouds (empty on a cloud's clusters)
    # network_path: the path its sockets take, as its grouping signal declares it (issue 30 item 2)
    # untyped_nodes: nodes whose instance type is unknown (a Slurm node joined to no instance; issue 31)
    # evidence: what an evidence file shows of its job (None on an audited cluster; issue 30 item 3)
    "clusters": (
        "status",
        "complete",
        "not_judged",
        "cloud_instances",
        "cloud_clusters",
        "network_path",
        "untyped_nodes",
        "evidence",
    ),
    "summary": (
        "clusters_by_status",
        "clusters_not_fully_judged",
        "skipped_clusters",
        "nodes_by_state",
        "waived",
        "in_baseline",
        # per-scope collection (a live fleet run's; empty for the demo's dumps)
        "scopes",
        "scopes_incomplete",
        "api_calls",
        "retries",
    ),
    "findings": ("fingerprint", "waiver", "baseline", "confidence"),
}
# A penalty's cost figures then (GPUs x 24 x (slowdown - 1)) and now (out of GPUs x 24: penalty.penalty_of).
COST_THEN = ("extra_gpu_hours_per_day", "extra_dollars_per_day")
# compute_prior: issue 32, the MFU prior (or measured step) a slowdown rests on, said beside it
COST_NOW = (
    "gpu_hours_per_day",
    "lost_share",
    "lost_gpu_hours_per_day",
    "lost_dollars_per_day",
    "possible",
    "compute_prior",
)
SUMMARY_COST_NOW = (
    "gpu_hours_per_day",
    "lost_gpu_hours_per_day",
    "lost_dollars_per_day",
    "clusters_cannot_run",
    "possible_findings",
    "possible_lost_gpu_hours_per_day",
    "possible_lost_dollars_per_day",
)


REWORDED = {
    "so nodes in different ones exchange collective traffic over TCP, if at all.": (
        "so nodes in different ones cannot reach each other over EFA: NCCL picks EFA at start, and a job across "
        "them fails to connect or hangs."
    ),
    "so those pairs fall back to TCP.": (
        "so those pairs cannot reach each other over EFA and a job across them fails to connect or hangs at start."
    ),
    # AWS150 says why it carries no cost (issue 28: where no figure is published, the cost is not estimated).
    "traffic between those groups crosses the most network layers.": (
        "traffic between those groups crosses the most network layers. Its cost is not estimated: AWS publishes no "
        "bandwidth or latency figure for crossing a layer."
    ),
}


def _without_additions(report: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps({k: v for k, v in report.items() if k not in ("generated_at", "source")})
    stripped: dict[str, Any] = json.loads(text.replace(f":{DEMO_ACCOUNT}:", ":"))
    for key in ("findings", "clusters", "errors"):
        for item in stripped[key]:
            item.pop("account")
    for key in ADDED_SINCE["report"]:
        stripped.pop(key)
    stripped["rules"] = [r for r in stripped["rules"] if r not in RULES_SINCE]
    stripped["workload"].pop("layout")  # issue 32: the data-parallel layout priced, its defaults named
    stripped["workload"].pop("nccl")  # issue 32: the NCCL release priced, the default named
    for cluster in stripped["clusters"]:
        for key in ADDED_SINCE["clusters"]:
            cluster.pop(key)
    for finding in stripped["findings"]:
        for key in ADDED_SINCE["findings"]:
            finding.pop(key)
    for key in ADDED_SINCE["summary"]:
        stripped["summary"].pop(key)
    unreachable = {f["cluster"] for f in stripped["findings"] if f["effect"] == "unreachable"}
    for cluster in stripped["clusters"]:
        if cluster["id"] in unreachable:
            cluster.pop("penalty")
        else:
            cluster["penalty"].pop("cannot_run")  # added with the cannot-run penalty
            for key in (*COST_NOW, *MODEL_FIGURES):
                cluster["penalty"].pop(key)
    for key in SUMMARY_COST_NOW:
        stripped["summary"].pop(key)
    return stripped


def test_demo_report_differs_from_before_only_by_scope() -> None:
    report = _demo_report()
    before = json.loads(BEFORE.read_text())
    before = {k: v for k, v in before.items() if k not in ("generated_at", "source")}
    unreachable = {f["cluster"] for f in before["findings"] if f["effect"] == "unreachable"}
    for cluster in before["clusters"]:
        if cluster["id"] in unreachable:
            cluster.pop("penalty")
        else:
            for key in (*COST_THEN, *MODEL_FIGURES):
                if key not in MODEL_FIGURES_SINCE:  # the figures added since are not in the recording before
                    cluster["penalty"].pop(key)
    for key in COST_THEN:
        before["summary"].pop(key)
    # The loose-placement note no longer names AWS: GCP and Azure clusters get it too.
    text = json.dumps(before).replace("AWS publishes no bandwidth cost", "no published bandwidth cost")
    # AWS111 and AWS113 said their peers fall back to TCP while their effect (unreachable) prices them "cannot
    # run"; the messages now say what the penalty assumes (rule_wording).
    for said, says in REWORDED.items():
        text = text.replace(said, says)
    assert _without_additions(report) == json.loads(text)


def _penalties(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: {k: c["penalty"][k] for k in MODEL_FIGURES if k in c["penalty"]} for c in report["clusters"]}


def test_the_penalty_models_figures_are_the_recorded_ones() -> None:
    """Every cluster's slowdown, step seconds and inter-node bandwidths as recorded after issue 22's model was
    checked (a change of the model shows here: regenerate with `python tests/test_demo_snapshot.py --penalties`)."""
    recorded = _rounded(json.loads(PENALTIES.read_text()))
    now = _rounded(_penalties(_demo_report()))
    assert now.keys() == recorded.keys()
    for cluster, figures in now.items():
        assert figures == recorded[cluster], cluster


def _rounded(value: Any) -> Any:
    """Floats to 9 significant digits (the last bits of a sum differ between platforms), the rest as it is."""
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def test_clusters_whose_peers_cannot_reach_each_other_cannot_run() -> None:
    report = _demo_report()
    unreachable = {f["cluster"] for f in report["findings"] if f["effect"] == "unreachable"}
    assert len(unreachable) == 3  # AWS110 (security group), AWS111 (zones), AWS113 (p4d with p5)
    for cluster in report["clusters"]:
        penalty = cluster["penalty"]
        if cluster["id"] in unreachable:
            assert penalty["cannot_run"] is True and penalty["slowdown"] is None
            every = cluster["gpus"] * 24.0
            assert penalty["lost_gpu_hours_per_day"] == {"low": every, "high": every}
            assert penalty["lost_share"] == {"low": 1.0, "high": 1.0}
        else:
            assert penalty["cannot_run"] is False
    total = report["summary"]["lost_gpu_hours_per_day"]
    estimated = [c["penalty"] for c in report["clusters"] if c["penalty"]["estimated"]]
    assert total["high"] == pytest.approx(sum(p["lost_gpu_hours_per_day"]["high"] for p in estimated))
    assert report["summary"]["clusters_cannot_run"] == 3


def test_what_each_recorded_slowdown_loses_is_bounded_by_the_cluster() -> None:
    """The slowdowns recorded before the cost was bounded, priced now: 1 - 1/slowdown of GPUs x 24, never more
    (the old extra GPU-hours passed the cluster's own at any slowdown above 2x, as the snapshot shows)."""
    report = {c["id"]: c for c in _demo_report()["clusters"]}
    before = json.loads(BEFORE.read_text())
    unreachable = {f["cluster"] for f in before["findings"] if f["effect"] == "unreachable"}
    over = 0
    for then in before["clusters"]:
        if then["id"] in unreachable or not then["penalty"]["estimated"]:
            continue
        now = report[then["id"].replace("aws:", f"aws:{DEMO_ACCOUNT}:", 1)]["penalty"]
        paid = then["gpus"] * 24.0
        for bound in ("low", "high"):
            share = 1 - 1 / now["slowdown"][bound]  # today's slowdown (issue 22), priced as a share
            assert now["lost_share"][bound] == pytest.approx(share)
            assert now["lost_gpu_hours_per_day"][bound] == pytest.approx(paid * share)
            assert now["lost_gpu_hours_per_day"][bound] <= paid
            over += then["penalty"]["extra_gpu_hours_per_day"][bound] > paid
    assert over >= 2  # the old figure was impossible on the costliest clusters


def test_every_finding_and_cluster_of_the_demo_carries_its_account() -> None:
    report = _demo_report()
    assert report["findings"] and report["clusters"]
    assert {f["account"] for f in report["findings"]} == {DEMO_ACCOUNT}
    assert {c["account"] for c in report["clusters"]} == {DEMO_ACCOUNT}
    assert all(c["id"].startswith(f"aws:{DEMO_ACCOUNT}:us-east-1:") for c in report["clusters"])


def test_the_demo_says_what_it_judged() -> None:
    report = _demo_report()
    statuses = {c["id"].rsplit(":", 1)[-1]: c["status"] for c in report["clusters"]}
    assert statuses["auto-scaling-group/llm-prod"] == "clean"
    assert {s for k, s in statuses.items() if k != "auto-scaling-group/llm-prod"} == {"findings"}
    assert all(c["not_judged"] == [] for c in report["clusters"])  # every fact was collected
    assert report["summary"]["clusters_by_status"] == {"clean": 1, "findings": 9, "incomplete": 0}
    assert report["summary"]["nodes_by_state"] == {"running": 34, "terminated": 1}
    assert report["skipped_clusters"] == [] and report["summary"]["skipped_clusters"] == 0


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--penalties"]:
        PENALTIES.write_text(json.dumps(_penalties(_demo_report()), indent=2, sort_keys=True) + "\n")
        print(f"wrote {PENALTIES}")
