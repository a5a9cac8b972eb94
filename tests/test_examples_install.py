"""Each CI example under examples/ installed and run as written, from a wheel of this checkout (issue 30, item 7).

Both CI examples used to install `fabriccheck` without the extra their command needs, so their first command exited
2 and no SARIF was uploaded. Here every job of the GitHub Actions workflow and of the GitLab CI file is replayed in
a fresh virtualenv: its own `pip install` line, as written, gets the wheel built once from this checkout (pip
configured through its environment: no index, the wheel's folder as --find-links, --no-deps), then its fabriccheck
commands run in order through the installed console script on the demo data (with the substitutions
examples/README.md describes), and the files the job uploads (SARIF, JUnit, artifacts) and the metrics it pushes
are checked. No registry is asked: the virtualenv reaches the test environment's installed libraries through a
.pth file. So that this sharing cannot hide a missing extra, every library a command imports must be a
requirement of fabriccheck or of the extras the job's install line names (with their own requirements), as the
built wheel's METADATA declares them (Provides-Extra, Requires-Dist: packaging.python.org, Core metadata
specifications).
"""

from __future__ import annotations

import email.parser
import functools
import importlib.metadata
import json
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from loopback import serving
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from prometheus_client.parser import text_string_to_metric_families
from test_examples import (
    EXPECTED,
    SARIF_SCHEMA,
    _copy,
    _instructions,
    _shell_commands,
    _workspace,
    demo_argv,
    examples,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
PIP_INSTALL = re.compile(r"^\s*pip install\b.*$", re.M)
# `fabriccheck[aws,plan]` in an install line: the extras it names.
EXTRAS = re.compile(r"\bfabriccheck\[([\w,\s-]+)\]")


@dataclass
class Job:
    example: str  # under examples/
    name: str
    installs: list[str] = field(default_factory=list)  # its pip install lines, as written
    commands: list[tuple[str, ...]] = field(default_factory=list)  # its fabriccheck commands, in order
    uploads: list[str] = field(default_factory=list)  # the files it uploads or keeps

    @property
    def extras(self) -> set[str]:
        return {e.strip() for line in self.installs for m in EXTRAS.finditer(line) for e in m.group(1).split(",")}


def github_jobs(path: Path) -> Iterator[Job]:
    """A workflow's jobs: `run` steps, and what upload-sarif and upload-artifact steps upload."""
    for name, spec in yaml.safe_load(path.read_text())["jobs"].items():
        job = Job(str(path.relative_to(EXAMPLES)), name)
        for step in spec["steps"]:
            script = str(step.get("run", ""))
            job.installs += PIP_INSTALL.findall(script)
            job.commands += _shell_commands(script)
            uses, given = str(step.get("uses", "")), step.get("with") or {}
            if uses.startswith("github/codeql-action/upload-sarif"):
                job.uploads.append(given["sarif_file"])
            elif uses.startswith("actions/upload-artifact"):
                job.uploads += str(given["path"]).split()
        yield job


def gitlab_jobs(path: Path) -> Iterator[Job]:
    """A GitLab CI file's jobs (templates merged in through `extends`): before_script and script lines, and their
    artifacts (paths and the JUnit report)."""
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    for name, spec in doc.items():
        if name.startswith(".") or not isinstance(spec, dict) or "script" not in spec:
            continue
        merged = {**doc.get(str(spec.get("extends", "")), {}), **spec}
        job = Job(str(path.relative_to(EXAMPLES)), name)
        for line in [*merged.get("before_script", []), *merged["script"]]:
            job.installs += PIP_INSTALL.findall(line)
            job.commands += _shell_commands(line)
        artifacts = merged.get("artifacts") or {}
        job.uploads += [*artifacts.get("paths", []), *(artifacts.get("reports") or {}).values()]
        if job.commands:
            yield job


def ci_jobs() -> list[Job]:
    return [
        *github_jobs(EXAMPLES / "github-actions" / "fabric-plan-gate.yml"),
        *gitlab_jobs(EXAMPLES / "gitlab-ci" / ".gitlab-ci.yml"),
    ]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of this checkout, built once (hatchling from the test extra: no build isolation, no index)."""
    pytest.importorskip("hatchling", reason="the test extra's hatchling builds the wheel without a registry")
    folder = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    built = subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(folder), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    [found] = folder.glob("fabriccheck-*.whl")
    return found


def fresh_venv(folder: Path) -> Path:
    """A virtualenv with nothing installed, which sees this environment's libraries (a .pth line, so none of their
    own .pth files run: this checkout's editable install stays out) and runs this environment's pip as `pip`."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    python = folder / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    outer = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (Path(site) / "_test_environment.pth").write_text("".join(f"{p}\n" for p in outer))
    pip = folder / "bin" / "pip"
    pip.write_text(f"#!{python}\nimport sys\nfrom pip._internal.cli.main import main\nsys.exit(main())\n")
    pip.chmod(0o755)
    return folder


@dataclass
class Pushed:
    bodies: dict[str, str] = field(default_factory=dict)  # Pushgateway path -> the metrics pushed there


def _gateway(pushed: Pushed) -> type[BaseHTTPRequestHandler]:
    """A Pushgateway's push API (PUT or POST /metrics/job/JOB, text format; 200 on success: prometheus/pushgateway
    README, "API"), keeping what was pushed."""

    class Handler(BaseHTTPRequestHandler):
        def _push(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            pushed.bodies[self.path] = body.decode()
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_PUT = do_POST = _push

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def test_the_examples_ci_jobs_are_found_with_their_install_and_uploads() -> None:
    """The replay below is not empty: every CI job with a fabriccheck command installs it and uploads something."""
    jobs = {(j.example, j.name): j for j in ci_jobs()}
    assert set(jobs) == {
        ("github-actions/fabric-plan-gate.yml", "plan-gate"),
        ("gitlab-ci/.gitlab-ci.yml", "fabriccheck-plan-gate"),
        ("gitlab-ci/.gitlab-ci.yml", "fabriccheck-audit"),
    }
    assert jobs[("github-actions/fabric-plan-gate.yml", "plan-gate")].uploads == ["fabriccheck.sarif"]
    for job in jobs.values():
        assert len(job.installs) == 1 and job.extras and job.uploads, job


@pytest.mark.parametrize("job", ci_jobs(), ids=lambda j: f"{j.example}:{j.name}")
def test_a_ci_job_installs_what_its_commands_need_and_uploads_its_files(job: Job, wheel: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    _workspace(workspace, "aws-wrong")  # the demo's wrong plan as infra/plan.json, a previous audit
    venv = fresh_venv(tmp_path / "venv")
    pushed = Pushed()
    with serving(_gateway(pushed)) as gateway:
        env = _ci_env(venv, wheel, tmp_path, gateway)
        for line in job.installs:
            done = subprocess.run(["sh", "-c", line], env=env, cwd=workspace, capture_output=True, text=True)
            assert done.returncode == 0, (line, done.stderr[-3000:])
        imported, live = _run_installed(venv, job.example, job.commands, env, workspace, gateway)
    extras, allowed = _allowed(wheel, job.extras)
    outside = _outside(imported, allowed)
    assert not outside, f"{job.installs} does not install what its commands import: {outside}"
    # The live scans' SDKs, which a dump does not import: each cloud's extra is named after it (pyproject).
    assert live <= extras, f"{job.installs} does not install the SDK of its live scans: {sorted(live - extras)}"
    for name in job.uploads:
        _check_upload(workspace / name)
    if any("--pushgateway" in argv for argv in job.commands):
        [metrics] = pushed.bodies.values()
        assert "fabriccheck_findings" in {f.name for f in text_string_to_metric_families(metrics)}


def _run_installed(
    venv: Path, example: str, commands: list[tuple[str, ...]], env: dict[str, str], folder: Path, gateway: str
) -> tuple[set[str], set[str]]:
    """Run an example's commands, in order, through the virtualenv's console script (the wheel's copy, checked):
    each must exit as EXPECTED says. The modules they imported, and the clouds they scan live as written."""
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import fabriccheck; print(fabriccheck.__file__)"],
        env=env,
        cwd=folder,
        capture_output=True,
        text=True,
    )
    assert installed.stdout.startswith(str(venv)), installed  # the wheel's copy, not this checkout
    imported: set[str] = set()
    live: set[str] = set()
    for argv in commands:
        words = demo_argv(argv, gateway, env)
        if words[1:2] == ["--from-dump"] and "--from-dump" not in argv:
            live.add(words[0])  # a live scan as written, run on the demo's dump here: it needs the cloud's SDK
        result = subprocess.run(
            [str(venv / "bin" / "fabriccheck"), *words],
            env={**env, "PYTHONPROFILEIMPORTTIME": "1"},  # each module imported, one stderr line each
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=300,
        )
        modules, stderr = _imports(result.stderr)
        imported |= modules
        assert result.returncode == EXPECTED[(example, shlex.join(argv))], (argv, stderr[-3000:])
        assert "Traceback" not in stderr
    return imported, live


def test_the_dockerfile_builds_and_installs_offline_what_its_image_runs(wheel: Path, tmp_path: Path) -> None:
    """The Dockerfile's COPY steps replayed from the checkout (the build context) into a folder standing for the
    image's root, then its `RUN pip install` line, as written but for the image's paths, in a fresh virtualenv
    standing for the image's Python: pip builds the wheel from only what was copied, with no index and no build
    isolation (hatchling from the test extra; PIP_NO_BUILD_ISOLATION=0 turns isolation off: pip's option names
    beginning with no- read the variable inverted, pip docs "Configuration", environment variables). The installed
    command must run the demo from another folder (the wheel carries the rules and the demo data), and every
    command the image runs (its CMD, the CronJobs' args, the commands its comments give) imports nothing and scans
    no cloud that the extras of its install line do not cover."""
    image = tmp_path / "image"
    venv = fresh_venv(tmp_path / "python")
    ran: list[str] = []
    for op, args in _instructions((EXAMPLES / "Dockerfile").read_text()):
        if op == "COPY":
            *sources, target = shlex.split(args)
            for source in sources:
                _copy(ROOT / source, image / target.lstrip("/"), many=len(sources) > 1 or target.endswith("/"))
        elif op == "RUN" and "pip install" in args:
            ran.append(args)
    [install] = ran
    assert not (image / "src" / ".git").exists() and (image / "src" / "pyproject.toml").is_file()
    pushed = Pushed()
    with serving(_gateway(pushed)) as gateway:
        env = {**_ci_env(venv, wheel, tmp_path, gateway), "PIP_NO_BUILD_ISOLATION": "0"}
        command = re.sub(r"(?<![\w/])/src\b", str(image / "src"), install)
        done = subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert not (image / "src").exists()  # the step also removes the sources it installed from
        demo = subprocess.run(
            [str(venv / "bin" / "fabriccheck"), "demo", "-f", "json"], capture_output=True, text=True, cwd=tmp_path
        )
        assert demo.returncode == 0, demo.stderr
        report = json.loads(demo.stdout)
        assert report["complete"] is True and len(report["findings"]) == 50  # 48, and the Slurm demo's 2
        runs = [e for e in examples() if e.file == "Dockerfile" or e.file.startswith("kubernetes/")]
        imported: set[str] = set()
        live: set[str] = set()
        for file in dict.fromkeys(e.file for e in runs):
            found = _run_installed(venv, file, [e.argv for e in runs if e.file == file], env, tmp_path, gateway)
            imported, live = imported | found[0], live | found[1]
    named = re.search(r"/src\[([\w,\s-]+)\]", install)
    assert named is not None, install
    extras, allowed = _allowed(wheel, {e.strip() for e in named.group(1).split(",")})
    outside = _outside(imported, allowed)
    assert not outside, f"{install} does not install what the image's commands import: {outside}"
    assert live == {"aws", "azure", "gcp"} and live <= extras, (live, extras)
    assert {path.split("/")[-1] for path in pushed.bodies} == {
        "fabriccheck-aws",
        "fabriccheck-gcp",
        "fabriccheck-azure",
    }


def _ci_env(venv: Path, wheel: Path, tmp_path: Path, gateway: str) -> dict[str, str]:
    """The job's environment: the virtualenv first on PATH, pip sent to the wheel's folder and nowhere else."""
    return {
        **os.environ,
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(venv),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheel.parent),
        "PIP_NO_DEPS": "1",  # the libraries come from the test environment (checked against the extras instead)
        "PIP_IGNORE_INSTALLED": "1",  # this checkout's own install is visible through the .pth: install anyway
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_CACHE_DIR": str(tmp_path / "pip-cache"),
        "PUSHGATEWAY_URL": gateway,
    }


def _imports(stderr: str) -> tuple[set[str], str]:
    """The modules a process imported (PYTHONPROFILEIMPORTTIME: `import time: self | cumulative | module`), and its
    stderr without those lines."""
    modules, rest = set(), []
    for line in stderr.splitlines(keepends=True):
        if line.startswith("import time:"):
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                modules.add(name)
        else:
            rest.append(line)
    return modules, "".join(rest)


def _allowed(wheel: Path, extras: set[str]) -> tuple[set[str], set[str]]:
    """The extras an install of the wheel with `extras` gets (with those an extra names, as `all` does) and the
    distributions it brings: fabriccheck's requirements and those of the extras, then theirs, transitively."""
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.parser.Parser().parsestr(archive.read(name).decode())
    declared = set(metadata.get_all("Provides-Extra") or [])
    assert extras <= declared, f"extras {sorted(extras - declared)} are not declared (pyproject: {sorted(declared)})"
    own = [Requirement(r) for r in metadata.get_all("Requires-Dist") or []]
    wanted = set(extras)
    while True:  # fabriccheck[all] requires fabriccheck[aws,azure,...]
        more = {e for r in own if r.name == "fabriccheck" and _applies(r, wanted) for e in r.extras} - wanted
        if not more:
            break
        wanted |= more
    found: set[str] = set()
    pending = [r for r in own if r.name != "fabriccheck" and _applies(r, wanted)]
    while pending:
        requirement = pending.pop()
        key = canonicalize_name(requirement.name)
        if key in found:
            continue
        found.add(key)
        try:
            nested = importlib.metadata.requires(requirement.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed here, so nothing can import it
        pending += [r for r in map(Requirement, nested) if _applies(r, set(requirement.extras))]
    # Every extra whose requirements all come with the install (hatchling writes `all`'s self-reference out into
    # the requirements it names, so `all` covers `aws` this way).
    covered = {
        extra
        for extra in declared
        if all(canonicalize_name(r.name) in found for r in own if r.name != "fabriccheck" and _only_for(r, extra))
    }
    return wanted | covered, found


def _only_for(requirement: Requirement, extra: str) -> bool:
    marker = requirement.marker
    return marker is not None and marker.evaluate({"extra": extra}) and not marker.evaluate({"extra": ""})


def _applies(requirement: Requirement, extras: set[str]) -> bool:
    marker = requirement.marker
    return marker is None or any(marker.evaluate({"extra": e}) for e in extras | {""})


def _outside(modules: set[str], allowed: set[str]) -> dict[str, str]:
    """Module -> distribution, for each imported module that comes from a distribution not in `allowed`."""
    owners = _module_owners()
    found = {m: owners[m] for m in modules if m in owners}
    return {m: d for m, d in sorted(found.items()) if d not in allowed and d != "fabriccheck"}


@functools.cache
def _module_owners() -> dict[str, str]:
    """Each importable module of this environment -> the distribution whose files hold it (from RECORD)."""
    owners: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        for file in dist.files or ():
            parts = file.parts
            if not parts or ".." in parts or not parts[-1].endswith((".py", ".so", ".pyd")):
                continue
            stem = parts[-1].split(".", 1)[0]
            dotted = [*parts[:-1]] if stem == "__init__" else [*parts[:-1], stem]
            if dotted and all(p.isidentifier() for p in dotted):
                owners.setdefault(".".join(dotted), canonicalize_name(dist.metadata["Name"]))
    return owners


def _check_upload(path: Path) -> None:
    """An uploaded file is there and reads as its format says (the demo's wrong plan has error findings)."""
    assert path.is_file(), f"{path.name}: not written"
    text = path.read_text()
    if path.suffix == ".sarif":
        sarif = json.loads(text)
        assert not list(jsonschema.Draft4Validator(SARIF_SCHEMA).iter_errors(sarif))
        assert sarif["runs"][0]["results"], path.name
    elif path.suffix == ".xml":
        assert ET.fromstring(text).find(".//failure") is not None, path.name
    elif path.suffix == ".json":
        report = json.loads(text)
        assert report["schema_version"] == 1 and report["complete"] is True, path.name
    else:
        assert text.strip(), path.name
