"""The README's sample output ("What a report looks like") is the demo's own text report, trimmed by
tools/build_readme_sample.py; these tests fail while it is stale, as tests/test_rule_docs.py does for the rule
pages. The tool is run as a user runs it (a subprocess), not imported from tools/."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "build_readme_sample.py"


def _check(readme: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL), "--check", "--readme", str(readme)], capture_output=True, text=True, timeout=300
    )


def test_the_readme_sample_is_the_demos_report() -> None:
    result = _check(ROOT / "README.md")
    assert result.returncode == 0, result.stderr + "\nrun: python tools/build_readme_sample.py"


def test_a_stale_sample_is_told_and_rewritten(tmp_path: Path) -> None:
    """A figure the demo no longer gives (the sample of an older penalty model) fails the check; the tool then
    rewrites the sample, and only the sample: the text around it is kept."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    stale = re.sub(r"Lost to the fabric: \S+", "Lost to the fabric: 4,898–5,078", readme, count=1)
    assert stale != readme
    copy = tmp_path / "README.md"
    copy.write_text(stale, encoding="utf-8")
    failed = _check(copy)
    assert failed.returncode == 1 and "the sample output is stale" in failed.stderr
    rewritten = subprocess.run(
        [sys.executable, str(TOOL), "--readme", str(copy)], capture_output=True, text=True, timeout=300
    )
    assert rewritten.returncode == 0, rewritten.stderr
    assert copy.read_text(encoding="utf-8") == readme
    assert "   1  aws    pcluster hpc-demo/gpu" in readme and "          fix: Launch every node" in readme
