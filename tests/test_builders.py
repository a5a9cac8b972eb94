"""What the tests need of the project's builders (the demo estates, the plan builder, the rule and schema pages,
the parsed YAML cache) is part of the package, fabriccheck/builders/; the scripts under tools/ only run it. So no
test reaches into tools/ through sys.path, and each documented `python tools/build_*.py --check` still runs as a
user runs it (docs/development.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# A sys.path entry that names the tools folder, however it is spelt (`/ "tools"`, "tools/").
TOOLS_ON_PATH = re.compile(r"sys\.path\.(?:insert|append)\([^\n]*[\"']tools[\"'/]")


def test_no_test_or_benchmark_puts_tools_on_the_import_path() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("tests", "benchmarks")
        for path in sorted((ROOT / folder).glob("*.py"))
        if TOOLS_ON_PATH.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


@pytest.mark.parametrize("tool", ["build_rule_docs.py", "build_schema_docs.py", "build_config_docs.py"])
def test_the_page_scripts_still_run_as_documented(tool: str) -> None:
    """Each checks its page and writes nothing: exit 0 while the page is current (the suite keeps it so)."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / tool), "--check"], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert result.returncode == 0, result.stderr


def test_the_builders_are_the_package_s() -> None:
    from fabriccheck.builders import demo_gcp, plan_builder

    assert demo_gcp.__name__ == "fabriccheck.builders.demo_gcp"
    assert plan_builder.__name__ == "fabriccheck.builders.plan_builder"
    assert demo_gcp.ROOT == ROOT  # installed from a wheel or not, they build in the checkout the tests run in
    assert not (ROOT / "tools" / "plan_builder.py").exists()  # a helper only tests used: it is the package's now
