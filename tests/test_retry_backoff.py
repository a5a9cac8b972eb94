"""The retry back-off is a setting (sources.retries.RetryPolicy.backoff_base, FABRICCHECK_RETRY_BASE): every
cloud's real SDK client waits on its scale, making the same attempts. The suite runs at 0.01 (conftest.SAFE_ENV);
at the default every SDK waits as it does out of the box.

Each test drives the real collector through a throttling emulator twice, with the random jitter seeded alike,
and records the waits the SDK asks for (not sleeping through them): the same number of waits, each scaled."""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from arm_replay import ArmReplay, make_certificate, use_fake_az
from arm_replay import serve as serve_arm
from cli_run import one_clean_line, run
from ec2_replay import Ec2Replay
from ec2_replay import serve as serve_ec2
from gce_replay import ComputeReplay, use_fake_google_key
from gce_replay import serve as serve_gce

from fabriccheck.builders import demo_azure, demo_gcp
from fabriccheck.errors import FabricCheckError
from fabriccheck.sources.retries import RETRIES, RETRY_BASE_ENV, retry_policy

ROOT = Path(__file__).resolve().parent.parent


def _waits(monkeypatch: pytest.MonkeyPatch, sdk: str) -> list[float]:
    """The waits the SDK (module name prefix `sdk`) asks time.sleep for, recorded and not slept."""
    asked: list[float] = []
    real = time.sleep

    def sleep(seconds: float) -> None:
        if sys._getframe(1).f_globals.get("__name__", "").startswith(sdk):
            asked.append(seconds)
        else:
            real(seconds)

    monkeypatch.setattr(time, "sleep", sleep)
    return asked


def _both_scales(monkeypatch: pytest.MonkeyPatch, sdk: str, collect: Callable[[], Any]) -> tuple[list[float], ...]:
    """The waits of one collection at the production scale (the variable unset) and at 0.01, jitter alike."""
    runs = []
    for base in (None, "0.01"):
        if base is None:
            monkeypatch.delenv(RETRY_BASE_ENV, raising=False)
        else:
            monkeypatch.setenv(RETRY_BASE_ENV, base)
        asked = _waits(monkeypatch, sdk)
        random.seed(20261101)
        inventory = collect()
        assert inventory.complete, inventory.errors  # retried through
        runs.append(list(asked))
    return tuple(runs)


def test_the_default_is_the_production_back_off_and_a_bad_value_is_refused() -> None:
    assert retry_policy({}) is RETRIES and RETRIES.backoff_base == 1.0 and RETRIES.max_attempts == 8
    assert retry_policy({RETRY_BASE_ENV: "0.01"}).backoff(20.0) == pytest.approx(0.2)
    for bad in ("soon", "0", "-1", "nan", "inf", "61"):
        with pytest.raises(FabricCheckError, match=f"{RETRY_BASE_ENV}: '{bad}' is not a back-off base"):
            retry_policy({RETRY_BASE_ENV: bad})


def test_aws_waits_on_the_scale_with_the_same_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    from fabriccheck.providers.aws import collect

    counts = []

    def one() -> Any:
        replay = Ec2Replay.from_dump(ROOT / "fixtures" / "demo" / "aws")
        replay.throttle = {"DescribeInstances": 3}
        with serve_ec2(replay) as url:
            inventory = collect.collect_live(["us-east-1"], endpoint_url=url)
        counts.append([a for _, a in replay.calls].count("DescribeInstances"))
        return inventory

    production, scaled = _both_scales(monkeypatch, "botocore", one)
    assert counts == [4, 4]  # three RequestLimitExceeded, then the answer, at either scale
    assert len(production) == len(scaled) == 3
    # botocore's throttling back-off: jitter x 1 s x 2^attempt (under 1, 2, 4 s), a hundredth of it at 0.01.
    assert all(0 < wait < 2**i for i, wait in enumerate(production))
    assert scaled == pytest.approx([wait * 0.01 for wait in production])


@pytest.fixture
def azure_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """AzureCliCredential only, a fake `az` first on PATH, and a test certificate trusted (reference/testing.md)."""
    cert, key = make_certificate(tmp_path)
    use_fake_az(tmp_path, cert, monkeypatch)
    yield cert, key


def test_azure_waits_on_the_scale_with_the_same_attempts(
    monkeypatch: pytest.MonkeyPatch, azure_env: tuple[Path, Path]
) -> None:
    from fabriccheck.providers.azure import collect

    sub = demo_azure.SUBSCRIPTION
    counts = []

    def one() -> Any:
        # Retry-After 0 leaves the wait to the client's own back-off.
        replay = ArmReplay(
            {sub: demo_azure.demo(sub).files}, page_size=50, throttle={"vm-list.json": 3}, retry_after="0"
        )
        with serve_arm(replay, *azure_env) as url:
            inventory = collect.collect_live([sub], endpoint_url=url)
        counts.append(replay.count("/providers/Microsoft.Compute/virtualMachines"))
        return inventory

    production, scaled = _both_scales(monkeypatch, "azure", one)
    assert counts == [4, 4]
    # azure-core: no wait before the first retry, then 0.8 s x 2^(n-1).
    assert production == pytest.approx([1.6, 3.2])
    assert scaled == pytest.approx([0.016, 0.032])


def test_gcp_waits_on_the_scale_with_the_same_attempts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from fabriccheck.providers.gcp import collect

    use_fake_google_key(tmp_path, monkeypatch)
    project = demo_gcp.Project(demo_gcp.PROJECT)
    demo_gcp.build(project)
    counts = []

    def one() -> Any:
        replay = ComputeReplay.from_files({project.name: project.files()})
        replay.failures_once[(project.name, "instances")] = 429
        with serve_gce(replay) as url:
            inventory = collect.collect_live([project.name], endpoint_url=url)
        counts.append(sum(1 for r in replay.requests if r.path.endswith("/aggregated/instances")))
        return inventory

    production, scaled = _both_scales(monkeypatch, "google", one)
    assert counts == [2, 2]
    # api-core: uniform(0, 1 s) before the first retry (then doubling to 16 s, within 60 s), a hundredth at 0.01.
    assert len(production) == 1 and 0 < production[0] < 1.0
    assert scaled == pytest.approx([production[0] * 0.01])


def test_a_bad_back_off_base_is_one_line_naming_the_variable() -> None:
    env = {**os.environ, RETRY_BASE_ENV: "soon"}
    line = one_clean_line(run("aws", "-r", "us-east-1", "--endpoint-url", "http://127.0.0.1:9", env=env))
    assert f"environment variable {RETRY_BASE_ENV}: 'soon'" in line


def test_k8s_waits_on_the_scale_with_the_same_attempts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The live k8s reader (the real `kubernetes` client against tests/kube_replay.py): a 429 with Retry-After 1,
    then a connection reset, then the answer. The same three calls at either scale; the waits it asks for are the
    server's Retry-After and the exponential back-off (0.5 s x 2^attempt), a hundredth of them at 0.01."""
    pytest.importorskip("kubernetes")
    from kube_replay import KubeReplay, kubeconfig
    from kube_replay import serve as serve_kube

    from fabriccheck.providers.k8s import collect

    counts = []

    def one() -> Any:
        replay = KubeReplay.from_dump(ROOT / "fixtures" / "demo" / "k8s" / "eks-train", throttle={"pods": 1})
        replay.faults = {"pods": ["reset"]}
        with serve_kube(replay) as url:
            inventory = collect.collect_live([], kubeconfig=kubeconfig(tmp_path / "kubeconfig", url))
        counts.append(sum(1 for r in replay.requests if r.startswith("/api/v1/pods")))
        return inventory

    production, scaled = _both_scales(monkeypatch, "fabriccheck.providers.k8s", one)
    assert counts == [3, 3]
    assert production == [0.5, 1.0]  # the reset's back-off first (the fault comes before the 429), then Retry-After
    assert scaled == pytest.approx([0.005, 0.01])
