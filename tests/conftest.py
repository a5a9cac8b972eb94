"""Test-wide guards: fake credentials, no metadata probing, and no socket may leave 127.0.0.1."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hypothesis
import pytest

if TYPE_CHECKING:
    import _socket
    from socket import _Address

sys.path.insert(0, str(Path(__file__).parent))

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo" / "aws"

# Set for this process and inherited by every subprocess a test starts (reference/testing.md).
SAFE_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLETESTONLY",
    "AWS_SECRET_ACCESS_KEY": "test-secret-not-real",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    # google-auth compares NO_GCE_CHECK with "true" exactly: "True" left its metadata ping on, which went to
    # GCE_METADATA_IP (169.254.169.254 by default) from every subprocess run of `fabriccheck gcp` without a key.
    "NO_GCE_CHECK": "true",
    "GCE_METADATA_HOST": "127.0.0.1:9",
    "GCE_METADATA_IP": "127.0.0.1:9",
    "AZURE_TOKEN_CREDENTIALS": "AzureCliCredential",
    # Every SDK's retry back-off at a hundredth of the production waits (sources.retries.RetryPolicy): the fault
    # scenarios make the same attempts without sleeping through seconds of jitter each.
    "FABRICCHECK_RETRY_BASE": "0.01",
    # No test reads the user's clusters: `fabriccheck k8s` without --kubeconfig finds an empty kubeconfig.
    "KUBECONFIG": os.devnull,
}
os.environ.update(SAFE_ENV)
for leaking in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
    os.environ.pop(leaking, None)
# The tests that start `fabriccheck` as a process find the console script installed beside this interpreter,
# whether or not the virtualenv was activated (`.venv/bin/pytest` as well as `. .venv/bin/activate && pytest`).
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])



def _share_botocore_models() -> None:
    """botocore parses its JSON data files (the EC2 model is several MB, read through an OrderedDict hook) once per
    Session: about 0.3 s of each new session's first client. A process builds one session; this suite builds
    hundreds in one process (in-process CLI runs, collector tests). Each file is parsed once here and the same
    object handed to every session, as botocore already hands it to every client of one session (a fleet's many
    clients share their session's models). Only this process: a subprocess reads the files itself."""
    import functools

    from botocore import loaders

    read = loaders.JSONFileLoader().load_file

    @functools.cache
    def parsed(file_path: str) -> Any:
        return read(file_path)

    loaders.JSONFileLoader.load_file = lambda self, file_path: parsed(file_path)


_share_botocore_models()

# Hypothesis times each example (200 ms deadline) and the generation of its data (the too_slow health check): both
# fail a property test on a busy machine, where nothing about the property changed. The suite measures neither.
hypothesis.settings.register_profile(
    "fabriccheck", deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow]
)
hypothesis.settings.load_profile("fabriccheck")

_real_connect = socket.socket.connect


# Typed as what it replaces: socket.socket inherits connect from _socket.socket.
def _loopback_only(self: _socket.socket, address: _Address) -> None:
    host = address[0] if isinstance(address, tuple) else address
    if self.family in (socket.AF_INET, socket.AF_INET6) and host not in ("127.0.0.1", "::1", "localhost"):
        raise AssertionError(f"test tried to reach {address!r}: only 127.0.0.1 is allowed")
    _real_connect(self, address)


socket.socket.connect = _loopback_only  # type: ignore[method-assign]  # patching a method is the point


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which reads -n
def pytest_cmdline_main(config: pytest.Config) -> None:
    """One worker per core (worksteal: a worker that runs out takes half of another's queue, so the few long tests
    do not leave a core idle at the end) when pytest-xdist is there and -n was not given. `-n 0` or
    `-p no:xdist` runs the suite in this one process (`-n auto` in addopts made pytest refuse `-p no:xdist`)."""
    if not config.pluginmanager.hasplugin("xdist") or "PYTEST_XDIST_WORKER" in os.environ:
        return
    if config.getoption("numprocesses", None) is None and not config.getoption("usepdb", False):
        config.option.numprocesses = "auto"
        if config.option.dist == "no":
            config.option.dist = "worksteal"


@pytest.fixture
def demo_dir() -> Path:
    return DEMO


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    yield {**os.environ, **SAFE_ENV}
