"""A real Slurm controller for the tests (Debian's `slurm-wlm`, `slurmrestd` and `munge`, which .ci/run installs): a
private munged (its own key, socket, pid and log in a temporary folder) and a slurmctld on a free port of 127.0.0.1
with its own slurm.conf and topology.conf, read with the real scontrol, sinfo and squeue through SLURM_CONF, and a
slurmrestd beside it when a test asks.

The nodes are `State=CLOUD`: slurm.conf(5) "CLOUD: the node exists in the cloud ... [it] will be powered down"
until a job needs it, so no slurmd has to run, and slurmctld shows them idle~ (IDLE+CLOUD+POWERED_DOWN) for as long
as the test runs. ResumeProgram is `true`: when a job is given cloud nodes slurmctld runs it and waits ResumeTimeout
(an hour) for them to register: nothing is powered, and the job stays CONFIGURING on its nodes meanwhile. One node is
`State=FUTURE` (slurm.conf(5): "not yet exist ... not shown"). The jobs the fixture submits are writes to its own
controller; `fabriccheck slurm` itself only reads (providers/slurm/live.py ALLOWED).

Without the binaries the tests skip with the reason; under CI (REQUIRE_SLURM_TESTS=1, set by .ci/run) they fail.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket as socket_module
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from gateway_run import free_port

REQUIRE = "REQUIRE_SLURM_TESTS"  # =1 (.ci/run): a missing binary fails the tests instead of skipping them
SBIN = "/usr/sbin:/sbin"  # slurmctld and munged are in sbin, off a non-root user's PATH
DAEMONS = ("slurmctld", "munged", "slurmrestd")
CLIENTS = ("scontrol", "sinfo", "squeue", "sbatch", "munge")
WAIT_SECONDS = 30.0  # for a daemon to answer: bounded, and the failure says what it waited for

# The cluster: partition train (gpu-[1-4], two leaf switches), wide (train's nodes and gpu-5, which is in no
# switch: SLURM101), solo (gpu-[4-5], MaxNodes=1: single-node jobs, not judged).
TOPOLOGY_CONF = """\
SwitchName=leaf1 Nodes=gpu-[1-2]
SwitchName=leaf2 Nodes=gpu-[3-4]
SwitchName=spine Switches=leaf[1-2]
"""
NODES_AND_PARTITIONS = """\
NodeName=gpu-[1-5] CPUs=8 RealMemory=1000 Gres=gpu:8 State=CLOUD
NodeName=spare-1 CPUs=8 RealMemory=1000 Gres=gpu:8 State=FUTURE
PartitionName=train Nodes=gpu-[1-4] MaxNodes=UNLIMITED Default=YES State=UP
PartitionName=wide Nodes=gpu-[1-5] MaxNodes=UNLIMITED State=UP
PartitionName=solo Nodes=gpu-[4-5] MaxNodes=1 State=UP
"""


def _which(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path=SBIN)


def missing() -> list[str]:
    return [name for name in (*DAEMONS, *CLIENTS) if _which(name) is None]


def skip_without_slurm() -> None:
    """Skip (fail under CI) when Slurm or munge is not installed."""
    absent = missing()
    if absent:
        reason = f"{', '.join(absent)} not installed (apt-get install slurm-wlm slurmrestd munge)"
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{REQUIRE}=1 but {reason}")
        pytest.skip(reason)


@dataclass
class Controller:
    folder: Path  # slurm.conf, topology.conf, logs and state
    conf: Path
    env: dict[str, str]  # os.environ with SLURM_CONF: what the real scontrol, sinfo and squeue read

    def run(self, *argv: str) -> str:
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=WAIT_SECONDS, check=False)
        assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr.strip()}"
        return done.stdout

    def log(self) -> str:
        path = self.folder / "slurmctld.log"
        return path.read_text(errors="replace")[-1500:] if path.exists() else "(no log)"


def _wait(what: str, ready: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path) -> None:
    """Poll `ready()` until it is true, at most WAIT_SECONDS; the failure names what it waited for."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if ready():
            return
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    said = log.read_text(errors="replace")[-1500:] if log.exists() else "(no log)"
    pytest.fail(f"waited {WAIT_SECONDS:g} s for {what} (exit {proc.poll()}): {said}")


def _answers(argv: list[str], env: dict[str, str], says: str) -> str | None:
    """The output of a probe that succeeded and says `says`; None otherwise (not up yet)."""
    try:
        done = subprocess.run(argv, env=env or None, capture_output=True, text=True, timeout=10, check=False)
    except subprocess.TimeoutExpired:
        return None
    return done.stdout if done.returncode == 0 and says in done.stdout else None


def _munged(folder: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """munged with its own key (0400, in a 0700 folder) and socket (munged wants its folder searchable by all)."""
    secret, run = folder / "munge-key", folder / "munge"
    secret.mkdir(mode=0o700)
    run.mkdir(mode=0o755)
    run.chmod(0o755)
    key = secret / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    socket = run / "munge.socket"
    log = run / "munged.log"
    argv = [str(_which("munged")), "--foreground", f"--socket={socket}", f"--key-file={key}"]
    argv += [f"--pid-file={run / 'munged.pid'}", f"--log-file={log}", f"--seed-file={secret / 'munged.seed'}"]
    with log.open("ab") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
    munge = [str(_which("munge")), "--socket", str(socket), "--no-input"]
    _wait("munged to answer on its socket", lambda: _answers(munge, {}, "") is not None, proc, log)
    return proc, socket


def _slurm_conf(folder: Path, socket: Path, port: int) -> Path:
    true = shutil.which("true") or "/bin/true"
    user = getpass.getuser()
    conf = folder / "etc" / "slurm.conf"
    conf.parent.mkdir()
    (folder / "state").mkdir()
    jwt = folder / "state" / "jwt.key"  # slurmctld signs `scontrol token` with it (jwt.shtml); only it reads it
    jwt.write_bytes(os.urandom(32))
    jwt.chmod(0o600)
    conf.write_text(
        f"""# fabriccheck's test controller (tests/slurmctld_run.py)
ClusterName=fctest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={port}
SlurmdPort={port + 1}
SlurmUser={user}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket}
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key={jwt}
StateSaveLocation={folder / "state"}
SlurmdSpoolDir={folder / "spool"}
SlurmctldPidFile={folder / "slurmctld.pid"}
SlurmctldLogFile={folder / "slurmctld.log"}
SelectType=select/cons_tres
GresTypes=gpu
TopologyPlugin=topology/tree
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MailProg={true}
SuspendProgram={true}
ResumeProgram={true}
SuspendTime=3600
ResumeTimeout=3600
# Before 23.02, powered-down cloud nodes are hidden from sinfo and scontrol without it (22.05.8 lists none).
PrivateData=cloud
{NODES_AND_PARTITIONS}"""
    )
    (conf.parent / "topology.conf").write_text(TOPOLOGY_CONF)
    return conf


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=WAIT_SECONDS)


@contextmanager
def slurmrestd(controller: Controller) -> Iterator[str]:
    """slurmrestd on a free port of 127.0.0.1, taking the JWTs slurmctld signs (rest_auth/jwt); its URL. It will not
    run as root or SlurmUser (src/slurmrestd/slurmrestd.c at slurm-22-05-8-1: "should not be run as the root user"):
    as root, it drops to `nobody` once its socket is open (slurmrestd(8) -u); as the user running the tests, who is
    this controller's SlurmUser, it is told so (slurmrestd(8) SLURMRESTD_SECURITY=disable_user_check)."""
    port = free_port()
    argv = [str(_which("slurmrestd")), "-f", str(controller.conf), "-a", "rest_auth/jwt", "-s", "openapi/v0.0.38"]
    # doc/html/rest.shtml (22.05): "slurmrestd should be provided an invalid SLURM_JWT ... to activate JWT".
    env = dict(controller.env, SLURM_JWT="daemon")
    if os.geteuid() == 0:
        argv += ["-u", "nobody"]
    else:
        env["SLURMRESTD_SECURITY"] = "disable_user_check"
    log = controller.folder / "slurmrestd.log"
    with log.open("ab") as err:
        proc = subprocess.Popen([*argv, f"127.0.0.1:{port}"], env=env, stdout=err, stderr=err)
    try:
        _wait(f"slurmrestd to listen on 127.0.0.1:{port}", lambda: _listens(port), proc, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(proc)


def _listens(port: int) -> bool:
    with socket_module.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def slurmctld() -> Iterator[Controller]:
    """munged and slurmctld (foreground, `-i`: no saved state) in a private folder; both stopped on the way out."""
    folder = Path(tempfile.mkdtemp(prefix="fabriccheck-slurmctld-"))
    folder.chmod(0o755)  # munged checks that its socket's folders are searchable by every user
    started: list[subprocess.Popen[bytes]] = []
    try:
        munged, socket = _munged(folder)
        started.append(munged)
        conf = _slurm_conf(folder, socket, free_port())
        env = dict(os.environ, SLURM_CONF=str(conf))
        log = folder / "slurmctld.log"
        argv = [str(_which("slurmctld")), "-D", "-i", "-f", str(conf)]
        with (folder / "slurmctld.out").open("ab") as err:
            ctld = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
        started.append(ctld)
        ping = [str(_which("scontrol")), "ping"]
        _wait("slurmctld to answer `scontrol ping`", lambda: _answers(ping, env, "is UP") is not None, ctld, log)
        yield Controller(folder, conf, env)
    finally:
        for proc in reversed(started):
            _stop(proc)
        shutil.rmtree(folder, ignore_errors=True)
