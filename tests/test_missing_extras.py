"""A live command whose SDK extra is not installed says which extra to install, one line, exit 2 (issue 30, item 8),
whichever of the SDK's libraries is the first import to fail.

`pip install fabriccheck` without an extra leaves out the SDK and every library only the SDK needs: urllib3 is
the Kubernetes client's dependency (kubernetes-client/python requirements.txt), imported by the collector before
the client, so `fabriccheck k8s` used to print `ModuleNotFoundError: No module named 'urllib3'`. A None entry in
sys.modules makes an import raise ModuleNotFoundError, as when the library is not installed (docs.python.org,
The import system, "The module cache")."""

from __future__ import annotations

import subprocess
import sys

import pytest
from cli_run import one_clean_line

# Provider -> (a live command, the libraries a bare install lacks that its collector imports, the line).
LIVE = {
    "k8s": (["k8s"], ["urllib3", "kubernetes"], "Kubernetes extra for a live run: pip install 'fabriccheck[k8s]'"),
    "aws": (
        ["aws", "--region", "us-east-1", "--endpoint-url", "http://127.0.0.1:9"],
        ["urllib3", "jmespath", "dateutil", "botocore", "boto3"],
        "AWS extra: pip install 'fabriccheck[aws]'",
    ),
    "azure": (
        ["azure", "--subscription", "00000000-0000-0000-0000-000000000000"],
        ["requests", "urllib3", "msal", "isodate", "azure"],
        "Azure extra: pip install 'fabriccheck[azure]'",
    ),
    "gcp": (
        ["gcp", "--project", "demo-project"],
        ["requests", "urllib3", "grpc", "proto", "google"],
        "GCP extra: pip install 'fabriccheck[gcp]'",
    ),
}


def _without(absent: list[str], code: str) -> subprocess.CompletedProcess[str]:
    probe = f"import sys\nfor name in {absent!r}: sys.modules[name] = None\n{code}"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd="/")


@pytest.mark.parametrize("provider", sorted(LIVE))
def test_a_live_run_without_its_extra_names_the_extra_whatever_import_fails_first(provider: str) -> None:
    args, absent, says = LIVE[provider]
    result = _without(absent, f"from fabriccheck.cli import main\nsys.exit(main({args!r}))\n")
    assert one_clean_line(result) == f"fabriccheck: error: fabriccheck {provider} needs the {says}"


def test_k8s_without_urllib3_alone_names_the_extra() -> None:
    """The issue's case: the client's dependency is the first import, and the one missing."""
    args, _, says = LIVE["k8s"]
    result = _without(["urllib3"], f"from fabriccheck.cli import main\nsys.exit(main({args!r}))\n")
    assert one_clean_line(result) == f"fabriccheck: error: fabriccheck k8s needs the {says}"


def test_the_library_names_the_extra_too() -> None:
    result = _without(
        ["urllib3", "kubernetes"],
        "from fabriccheck.api import Live, audit\nfrom fabriccheck.errors import FabricCheckError\n"
        "try:\n    audit('k8s', Live())\nexcept FabricCheckError as exc:\n    print(exc)\n",
    )
    assert result.stdout.strip().endswith("pip install 'fabriccheck[k8s]'"), result.stderr[-2000:]
