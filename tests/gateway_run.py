"""A real Pushgateway for the tests (Debian's `prometheus-pushgateway`, which .ci/run installs): started on a free
port of 127.0.0.1 with no persistence file, and what it serves read back."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

GATEWAY = shutil.which("prometheus-pushgateway")
needs_gateway = pytest.mark.skipif(
    GATEWAY is None, reason="prometheus-pushgateway is not installed (apt-get install prometheus-pushgateway)"
)
# Any proxy in the environment is bypassed: these requests stay on 127.0.0.1.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))

Sample = tuple[str, frozenset[tuple[str, str]], float]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def pushgateway(folder: Path) -> Iterator[str]:
    """A Pushgateway on a free port of 127.0.0.1, persisting nothing (`--persistence.file=`: Debian's build would
    otherwise write /var/lib/prometheus/pushgateway.data); its URL. Its log goes to `folder`/pushgateway.log."""
    assert GATEWAY is not None
    log = folder / "pushgateway.log"
    for _ in range(5):  # the port may be taken between the probe and the start
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [GATEWAY, f"--web.listen-address=127.0.0.1:{port}", "--persistence.file="], stdout=out, stderr=out
            )
        if _ready(url, proc):
            break
        proc.kill()
        proc.wait()
    else:
        pytest.fail(f"the Pushgateway did not start: {log.read_text()[-500:]}")
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _ready(url: str, proc: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with DIRECT.open(f"{url}/-/ready", timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            time.sleep(0.05)
    return False


def samples(text: str) -> set[Sample]:
    return {
        (s.name, frozenset(s.labels.items()), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def served(url: str, job: str) -> set[Sample]:
    """The fabriccheck metrics the gateway serves under `job`, without the labels the gateway adds to each."""
    with DIRECT.open(f"{url}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    found: set[Sample] = set()
    for name, labels, value in samples(text):
        held = dict(labels)
        if name.startswith("fabriccheck_") and held.pop("job", None) == job:
            assert held.pop("instance") == ""  # the gateway's own, empty: the grouping key is the job alone
            found.add((name, frozenset(held.items()), value))
    return found
