"""Write the JSON reports of a fixed set of scans to a folder, or compare two such folders.

A speed-up of the judging stages must leave every report byte-identical but for the run's clock (generated_at,
duration_seconds). Run `python benchmarks/report_diff.py write OUT DUMPS` on the code before a change and again on
the code after, then `python benchmarks/report_diff.py compare OLD NEW`.
DUMPS is a folder with gcp/ and az/ from the big-fleet builders (tools/build_demo_gcp.py, build_demo_azure.py);
it may be omitted.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
CLOCK = re.compile(r'^(\s*"(?:generated_at|duration_seconds)": ).*$', re.M)


def scans(dumps: Path | None) -> dict[str, list[str]]:
    runs = {
        "demo": ["demo"],
        "demo-plan": ["demo", "--plan"],
        "aws": ["aws", "--from-dump", str(DEMO / "aws")],
        "aws-tag": [
            "aws",
            "--from-dump",
            str(DEMO / "aws"),
            "--cluster-tag",
            "eks:cluster-name",
            "--price-per-gpu-hour",
            "3",
        ],
        "azure": ["azure", "--from-dump", str(DEMO / "azure")],
        "gcp": ["gcp", "--from-dump", str(DEMO / "gcp")],
        "gcp-8b": ["gcp", "--from-dump", str(DEMO / "gcp"), "--workload", "llm-8b-ddp", "--price-per-gpu-hour", "2"],
        "gcp-sev": ["gcp", "--from-dump", str(DEMO / "gcp"), "--severity", "placement=error", "--ignore", "GCP14"],
    }
    for plan in sorted((DEMO / "plans").glob("*.json")):
        runs[f"plan-{plan.stem}"] = ["plan", str(plan)]
    for plan in sorted((ROOT / "tests" / "data" / "plans").rglob("*.json")):
        runs[f"plan-data-{plan.stem}"] = ["plan", str(plan)]
    if dumps is not None:
        runs["big-gcp"] = ["gcp", "--from-dump", str(dumps / "gcp"), "--price-per-gpu-hour", "3"]
        runs["big-azure"] = ["azure", "--from-dump", str(dumps / "az")]
        runs["big-azure-175b"] = ["azure", "--from-dump", str(dumps / "az"), "--workload", "llm-175b-3d"]
    return runs


def write(out: Path, dumps: Path | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, args in scans(dumps).items():
        done = subprocess.run(
            [sys.executable, "-m", "fabriccheck", *args, "-f", "json", "--fail-on", "never"],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        # The report as printed, but for its clock; with the exit code and anything on stderr.
        report = CLOCK.sub(r"\1(clock)", done.stdout)
        (out / f"{name}.json").write_text(f"{report}\nexit {done.returncode}\n{done.stderr}")
        print(name, done.returncode, report.count('"rule": '), "rule mentions")


def compare(old: Path, new: Path) -> int:
    bad = 0
    for path in sorted(old.glob("*.json")):
        other = new / path.name
        if not other.exists() or other.read_bytes() != path.read_bytes():
            print("DIFFERS:", path.name)
            bad += 1
    print(f"{len(list(old.glob('*.json')))} reports, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(Path(sys.argv[2]), Path(sys.argv[3]) if len(sys.argv) > 3 else None)
    else:
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
