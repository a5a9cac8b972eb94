"""`fabriccheck merge`: the JSON reports of separate jobs as one report, with the same exit-code rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One JSON report per cloud of the demo, as three CI jobs would write them, plus an incomplete one."""
    folder = tmp_path_factory.mktemp("reports")
    found: dict[str, Path] = {}
    for cloud in ("aws", "azure", "gcp"):
        found[cloud] = folder / f"{cloud}.json"
        result = run(cloud, "--from-dump", str(DEMO / cloud), "-f", "json", "-o", str(found[cloud]))
        assert result.returncode == 1, result.stderr  # the demo has error findings on every cloud
    partial = folder / "aws-partial"
    shutil.copytree(DEMO / "aws", partial)
    (partial / "describe-subnets.json").unlink()
    found["partial"] = folder / "partial.json"
    result = run("aws", "--from-dump", str(partial), "-f", "json", "-o", str(found["partial"]), "--fail-on", "never")
    assert result.returncode == 2, result.stderr
    return found


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def test_merged_report_adds_up_its_parts(parts: dict[str, Path], tmp_path: Path) -> None:
    merged_path = tmp_path / "merged.json"
    result = run(
        "merge", str(parts["aws"]), str(parts["azure"]), str(parts["gcp"]), "-f", "json", "-o", str(merged_path)
    )
    assert result.returncode == 1, result.stderr  # error findings, as in each part
    merged = _load(merged_path)
    pieces = [_load(parts[c]) for c in ("aws", "azure", "gcp")]
    assert merged["schema_version"] == 1 and merged["complete"] is True
    assert len(merged["findings"]) == sum(len(p["findings"]) for p in pieces)
    assert sorted(c["id"] for c in merged["clusters"]) == sorted(c["id"] for p in pieces for c in p["clusters"])
    summary = merged["summary"]
    for key in (
        "nodes",
        "clusters",
        "nodes_not_in_reported_clusters",
        "skipped_clusters",
        "scopes",
        "retries",
        "gpu_hours_per_day",
        "clusters_cannot_run",
        "possible_findings",
    ):
        assert summary[key] == sum(p["summary"][key] for p in pieces), key
    for key in ("findings", "by_rule", "by_category", "clusters_by_status", "nodes_by_state"):
        totals: dict[str, int] = {}
        for piece in pieces:
            for name, count in piece["summary"][key].items():
                totals[name] = totals.get(name, 0) + count
        assert {k: v for k, v in summary[key].items() if v} == {k: v for k, v in totals.items() if v}, key
    assert summary["possible_findings"] > 0 and summary["clusters_cannot_run"] > 0
    for bound in ("low", "high"):
        for key in ("lost_gpu_hours_per_day", "possible_lost_gpu_hours_per_day"):
            expected = sum(p["summary"][key][bound] for p in pieces if p["summary"][key] is not None)
            assert summary[key][bound] == pytest.approx(expected), key
    assert summary["lost_gpu_hours_per_day"]["high"] <= summary["gpu_hours_per_day"]
    assert set(merged["rules"]) == {r for p in pieces for r in p["rules"]}
    assert merged["scopes"] == [s for p in pieces for s in p["scopes"]]
    assert all(str(parts[c]) in merged["source"] for c in ("aws", "azure", "gcp"))
    # Findings come in the usual order: most severe first.
    ranks = {"error": 0, "warning": 1, "info": 2}
    assert [ranks[f["severity"]] for f in merged["findings"]] == sorted(
        ranks[f["severity"]] for f in merged["findings"]
    )


@pytest.mark.parametrize("fmt", ["text", "sarif", "junit", "markdown"])
def test_merged_report_renders_in_every_format(parts: dict[str, Path], fmt: str) -> None:
    result = run("merge", str(parts["aws"]), str(parts["gcp"]), "-f", fmt, "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    gcp_cluster = _load(parts["gcp"])["clusters"][0]["id"]
    aws_cluster = _load(parts["aws"])["clusters"][0]["id"]
    if fmt == "sarif":
        results = json.loads(result.stdout)["runs"][0]["results"]
        assert len(results) == len(_load(parts["aws"])["findings"]) + len(_load(parts["gcp"])["findings"])
    else:
        assert gcp_cluster.split("/")[-1] in result.stdout and aws_cluster.split("/")[-1] in result.stdout


def test_one_incomplete_part_makes_the_merge_incomplete_and_exit_2(parts: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "merged.json"
    result = run("merge", str(parts["partial"]), str(parts["gcp"]), "-f", "json", "-o", str(out), "--fail-on", "never")
    assert result.returncode == 2
    merged = _load(out)
    assert merged["complete"] is False
    assert merged["errors"] == _load(parts["partial"])["errors"] and merged["errors"]
    # --allow-incomplete: the findings decide (none fail at --fail-on never), the report still says incomplete.
    allowed = run(
        "merge",
        str(parts["partial"]),
        str(parts["gcp"]),
        "-f",
        "json",
        "-o",
        str(out),
        "--fail-on",
        "never",
        "--allow-incomplete",
    )
    assert allowed.returncode == 0, allowed.stderr
    assert _load(out)["complete"] is False


def test_a_clean_merge_exits_0_and_fail_on_is_honoured(parts: dict[str, Path]) -> None:
    assert run("merge", str(parts["aws"]), str(parts["azure"]), "--fail-on", "never").returncode == 0
    assert run("merge", str(parts["aws"]), str(parts["azure"]), "--fail-on", "info").returncode == 1


def test_bad_parts_are_one_line_exit_2(parts: dict[str, Path], tmp_path: Path) -> None:
    newer = _load(parts["aws"]) | {"schema_version": 2}
    (tmp_path / "newer.json").write_text(json.dumps(newer))
    assert "newer.json: report schema_version 2, but this fabriccheck merges version 1" in one_clean_line(
        run("merge", str(parts["gcp"]), str(tmp_path / "newer.json"))
    )
    (tmp_path / "broken.json").write_text('{"schema_version": 1, "findings": [')
    assert "broken.json: not valid JSON" in one_clean_line(
        run("merge", str(parts["gcp"]), str(tmp_path / "broken.json"))
    )
    (tmp_path / "inventory.json").write_text(json.dumps({"schema_version": 2, "nodes": []}))
    assert "inventory.json: not a fabriccheck JSON report" in one_clean_line(
        run("merge", str(tmp_path / "inventory.json"))
    )
    misshapen = _load(parts["aws"]) | {"clusters": [{"id": 3}]}
    (tmp_path / "misshapen.json").write_text(json.dumps(misshapen))
    assert "misshapen.json: not a fabriccheck JSON report (field clusters.0" in one_clean_line(
        run("merge", str(tmp_path / "misshapen.json"))
    )
    assert "absent.json: cannot read (No such file" in one_clean_line(run("merge", str(tmp_path / "absent.json")))
    # A report made before the cost was bounded: its extra GPU-hours do not add up with lost ones.
    older = _load(parts["aws"])
    older["summary"]["extra_gpu_hours_per_day"] = older["summary"].pop("lost_gpu_hours_per_day")
    (tmp_path / "older.json").write_text(json.dumps(older))
    assert "older.json: made by an older fabriccheck (extra_gpu_hours_per_day, since replaced by" in one_clean_line(
        run("merge", str(parts["gcp"]), str(tmp_path / "older.json"))
    )


def test_overlapping_parts_and_other_workloads_are_refused(parts: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "again.json"
    shutil.copy(parts["aws"], copy)
    assert "is in both" in one_clean_line(run("merge", str(parts["aws"]), str(copy)))
    assert "is named twice" in one_clean_line(run("merge", str(parts["aws"]), str(parts["aws"])))
    other = tmp_path / "other-workload.json"
    result = run("aws", "--from-dump", str(DEMO / "aws"), "-f", "json", "-o", str(other), "--workload", "llm-8b-ddp")
    assert result.returncode in (0, 1), result.stderr
    assert "penalties do not add up" in one_clean_line(run("merge", str(parts["gcp"]), str(other)))
    assert "is one of the reports being merged" in one_clean_line(
        run("merge", str(parts["gcp"]), "-o", str(parts["gcp"]))
    )


def test_waivers_and_plan_locations_survive_a_merge(parts: dict[str, Path], tmp_path: Path) -> None:
    """A part run with waivers keeps them waived in the merge (so the merge does not fail on them), and a plan
    part keeps the file and line of its resources."""
    waivers = tmp_path / "waivers.yaml"
    rules = sorted({f["rule"] for f in _load(parts["azure"])["findings"]})
    waivers.write_text(
        "waivers:\n"
        + "".join(f'  - rule: {r}\n    resources: ["*"]\n    reason: accepted for the test\n' for r in rules)
    )
    waived = tmp_path / "azure-waived.json"
    result = run(
        "azure", "--from-dump", str(DEMO / "azure"), "--waivers", str(waivers), "-f", "json", "-o", str(waived)
    )
    assert result.returncode == 0, result.stderr
    planned = tmp_path / "plan.json"
    plans = DEMO / "plans"
    result = run(
        "plan",
        str(plans / "aws-wrong.json"),
        "--terraform-dir",
        str(plans / "aws-wrong"),
        "-f",
        "json",
        "-o",
        str(planned),
    )
    assert result.returncode == 1, result.stderr
    merged_path = tmp_path / "merged.json"
    result = run("merge", str(waived), str(planned), "-f", "json", "-o", str(merged_path))
    merged = _load(merged_path)
    azure_findings = [f for f in merged["findings"] if f["rule"].startswith("AZ")]
    assert azure_findings and all(f["waiver"] for f in azure_findings)
    assert merged["summary"]["waived"] == len(azure_findings)
    assert merged["locations"] == _load(planned)["locations"] and merged["locations"]
    assert result.returncode == 1, result.stderr  # the plan part's errors still fail the merge
    only_waived = tmp_path / "only-waived.json"
    assert run("merge", str(waived), "-f", "json", "-o", str(only_waived)).returncode == 0
