"""The files under examples/, tested as far as this machine can (no container engine, no cluster):

- every Kubernetes manifest validates strictly against the Kubernetes API schema (kubernetes-validate);
- every `fabriccheck` command line in every example file (a container's args, a workflow's `run`, a GitLab job's
  `script`, a `docker run` or backticked command in a comment, a command in the README) runs against the demo data
  and exits as EXPECTED says. Commands run as written, with two substitutions (examples/README.md says so too): a
  live scan's scope options become `--from-dump` of the demo's dump of that cloud, and the Pushgateway URL is a
  real Pushgateway started on 127.0.0.1. A plan gate runs on the demo's wrong plan and on its correct one, placed
  where the workflow expects `infra/plan.json`;
- the Dockerfile's COPY and RUN pip install steps, and every CI job's install and commands, are replayed offline
  in a fresh virtualenv by tests/test_examples_install.py.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from cli_run import run
from gateway_run import GATEWAY, pushgateway, served

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DEMO = ROOT / "fixtures" / "demo"
SARIF_SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text())
# The oldest Kubernetes minor the manifests are meant for (CronJob timeZone is GA from 1.27) and the newest the
# validator knows.
KUBERNETES = ("1.27.0", kubernetes_validate.latest_version())


def manifests() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted((EXAMPLES / "kubernetes").glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document is not None:
                yield f"{path.name}/{document['kind']}/{document['metadata']['name']}", document


@pytest.mark.parametrize("version", KUBERNETES)
def test_the_kubernetes_manifests_validate_strictly(version: str) -> None:
    kinds: list[str] = []
    for name, document in manifests():
        kubernetes_validate.validate(document, version, strict=True)
        kinds.append(name.split("/")[1])
    assert kinds.count("CronJob") == 3 and kinds.count("ServiceAccount") == 3
    # The validator is not a formality: a misspelt field, or args that are not strings, are refused.
    _, cronjob = next(m for m in manifests() if m[1]["kind"] == "CronJob")
    for mutate in (_misspelt, _numeric_arg):
        broken = copy.deepcopy(cronjob)
        mutate(_container(broken))
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(broken, version, strict=True)


def _container(cronjob: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    return container


def _misspelt(container: dict[str, Any]) -> None:
    container["arg"] = container.pop("args")


def _numeric_arg(container: dict[str, Any]) -> None:
    container["args"] = [*container["args"], 3.93]


def test_the_cronjobs_run_the_image_as_its_own_non_root_user() -> None:
    user = re.search(r"^USER (\S+)$", (EXAMPLES / "Dockerfile").read_text(), re.M)
    assert user is not None
    for name, document in manifests():
        if document["kind"] == "CronJob":
            pod = document["spec"]["jobTemplate"]["spec"]["template"]["spec"]
            assert pod["securityContext"]["runAsNonRoot"] is True, name
            assert str(pod["securityContext"]["runAsUser"]) == user.group(1), name
            assert pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True, name


# ------------------------------------------------------------------------------------ the command lines


@dataclass(frozen=True)
class Example:
    file: str  # under examples/
    argv: tuple[str, ...]  # as written: fabriccheck ARGS

    @property
    def line(self) -> str:
        return shlex.join(self.argv)


def _shell_commands(script: str) -> Iterator[tuple[str, ...]]:
    """The `fabriccheck` commands of a shell script: lines joined at a trailing backslash, split at ; && || |."""
    script = re.sub(r"\\\n\s*", " ", script)
    for line in script.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        segment: list[str] = []
        for token in [*lexer, ";"]:
            if token in (";", "&&", "||", "|", "&"):
                words = segment[1:] if segment[:1] in (["then"], ["do"], ["else"]) else segment
                if words[:1] == ["fabriccheck"]:
                    yield tuple(words)
                segment = []
            else:
                segment.append(token)


def _in_comments_and_text(path: Path) -> Iterator[tuple[str, ...]]:
    """Backticked `fabriccheck ...` in comments and prose; `docker run IMAGE ARGS` of the image in comments; fenced
    shell lines of the README."""
    text = path.read_text()
    for found in re.findall(r"`(fabriccheck [^`]+)`", text):
        yield tuple(shlex.split(found))
    comments = "\n".join(re.sub(r"^\s*# ?", "", line) for line in text.splitlines() if line.lstrip().startswith("#"))
    yield from _docker_runs(comments)
    if path.suffix == ".md":
        for block in re.findall(r"```(?:sh|bash|console)?\n(.*?)```", text, re.S):
            yield from _shell_commands(re.sub(r"^\$ ", "", block, flags=re.M))


def _docker_runs(text: str) -> Iterator[tuple[str, ...]]:
    text = re.sub(r"\\\n\s*", " ", text)
    for line in text.splitlines():
        words = shlex.split(line) if line.strip().startswith("docker run ") else []
        images = [i for i, w in enumerate(words) if re.fullmatch(r"[\w./-]+/fabriccheck:[\w.-]+", w)]
        if images:
            yield ("fabriccheck", *words[images[0] + 1 :])


def examples() -> list[Example]:
    """Every fabriccheck command line of every file under examples/, in the order each file runs them."""
    found: list[Example] = []
    for path in sorted(p for p in EXAMPLES.rglob("*") if p.is_file()):
        name = str(path.relative_to(EXAMPLES))
        commands: list[tuple[str, ...]] = []
        if path.suffix in (".yaml", ".yml"):
            for document in yaml.safe_load_all(path.read_text()):
                commands += _structured(document)
        if path.name == "Dockerfile":
            entry = re.search(r"^ENTRYPOINT (\[.*\])$", path.read_text(), re.M)
            cmd = re.search(r"^CMD (\[.*\])$", path.read_text(), re.M)
            if entry and cmd:
                commands.append((*json.loads(entry.group(1)), *json.loads(cmd.group(1))))
        commands += _in_comments_and_text(path)
        found += [Example(name, argv) for argv in commands]
    return found


def _structured(node: Any) -> Iterator[tuple[str, ...]]:
    """A container running the fabriccheck image (its args), a workflow step's `run`, a GitLab job's `script`."""
    if isinstance(node, dict):
        image = node.get("image")
        if isinstance(image, str) and "/fabriccheck:" in image and "args" in node:
            yield ("fabriccheck", *node["args"])
        for key, value in node.items():
            if key in ("run", "script", "before_script") and isinstance(value, str | list):
                for script in [value] if isinstance(value, str) else value:
                    yield from _shell_commands(script)
            else:
                yield from _structured(value)
    elif isinstance(node, list):
        for item in node:
            yield from _structured(item)


# Per example command line: the exit code it must give on the demo data (with the substitutions above). A command
# added to an example must be added here, with the exit the example means it to give.
EXPECTED: dict[tuple[str, str], int] = {
    ("Dockerfile", "fabriccheck --help"): 0,
    ("Dockerfile", "fabriccheck demo"): 0,
    ("Dockerfile", "fabriccheck aws --all-regions --format json"): 1,  # the demo account has error findings
    ("README.md", "fabriccheck aws --print-iam-policy"): 0,
    ("README.md", "fabriccheck gcp --print-role --organization ID"): 0,
    ("README.md", "fabriccheck azure --print-role --management-group ID"): 0,
    ("kubernetes/cronjob-aws.yaml", "fabriccheck aws --print-iam-policy"): 0,
    ("gitlab-ci/.gitlab-ci.yml", "fabriccheck aws --print-iam-policy"): 0,
    ("kubernetes/cronjob-gcp.yaml", "fabriccheck gcp --print-role --organization ID"): 0,
    ("kubernetes/cronjob-azure.yaml", "fabriccheck azure --print-role --management-group ID"): 0,
    # --fail-on never: the CronJobs fail only when the audit is incomplete or the push fails.
    (
        "kubernetes/cronjob-aws.yaml",
        "fabriccheck aws --all-regions --price-per-gpu-hour 3.93 --fail-on never "
        "--format json --output - --pushgateway http://prometheus-pushgateway.monitoring.svc:9091 --job "
        "fabriccheck-aws",
    ): 0,
    (
        "kubernetes/cronjob-gcp.yaml",
        "fabriccheck gcp --organization 123456789012 --fail-on never --format json -o - "
        "--pushgateway http://prometheus-pushgateway.monitoring.svc:9091 --job fabriccheck-gcp",
    ): 0,
    (
        "kubernetes/cronjob-azure.yaml",
        "fabriccheck azure --management-group gpu-platform --fail-on never --format "
        "json -o - --pushgateway http://prometheus-pushgateway.monitoring.svc:9091 --job fabriccheck-azure",
    ): 0,
    # The plan gates: 1 on the wrong plan (checked here); on the correct plan they pass (test_plan_gates_pass_...).
    (
        "github-actions/fabric-plan-gate.yml",
        "fabriccheck plan infra/plan.json --terraform-dir infra --output fabriccheck.sarif --output -",
    ): 1,
    (
        "gitlab-ci/.gitlab-ci.yml",
        "fabriccheck plan infra/plan.json --terraform-dir infra -o fabriccheck.xml -o fabriccheck.md -o -",
    ): 1,
    (
        "gitlab-ci/.gitlab-ci.yml",
        "fabriccheck aws --all-regions --fail-on never -o audit.json -o audit.md "
        "--pushgateway '$PUSHGATEWAY_URL' --job fabriccheck-aws",
    ): 0,
    # A previous run that did not yet see AWS101: the new error finding is exit 1 (allowed by the job).
    ("gitlab-ci/.gitlab-ci.yml", "fabriccheck diff previous.json audit.json -f markdown -o changes.md"): 1,
}

# A live scan's scope options (the value they take, if any): replaced by --from-dump of the demo's dump.
LIVE_SCOPE = {
    "--all-regions": 0,
    "--region": 1,
    "-r": 1,
    "--organization": 1,
    "--folder": 1,
    "--project": 1,
    "--management-group": 1,
    "--subscription": 1,
    "--org-role": 1,
    "--role-arn": 1,
    "--profile": 1,
}


def demo_argv(argv: tuple[str, ...], gateway: str, env: dict[str, str]) -> list[str]:
    """The command as it runs here: variables expanded from `env`, the Pushgateway URL the test's own, and a live
    scan's scope replaced by the demo's dump (a command that prints the least privilege is left as it is)."""
    words = [re.sub(r"\$\{?(\w+)\}?", lambda m: env[m.group(1)], w) for w in argv[1:]]
    if "--pushgateway" in words:
        words[words.index("--pushgateway") + 1] = gateway
    cloud = words[0] if words else ""
    if cloud not in ("aws", "azure", "gcp") or {"--print-role", "--print-iam-policy"} & set(words):
        return words
    kept: list[str] = []
    skip = 0
    for word in words[1:]:
        if skip:
            skip -= 1
        elif word in LIVE_SCOPE:
            skip = LIVE_SCOPE[word]
        else:
            kept.append(word)
    return [cloud, "--from-dump", str(DEMO / cloud), *kept]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if GATEWAY is None:
        pytest.skip("prometheus-pushgateway is not installed (apt-get install prometheus-pushgateway)")
    with pushgateway(tmp_path_factory.mktemp("pushgateway")) as url:
        yield url


def _workspace(folder: Path, plan: str) -> None:
    """A CI workspace: the demo plan `plan` where the workflows expect `infra/plan.json`, its configuration (when it
    has one) as `infra/`, and a previous audit for the scheduled job's diff."""
    infra = folder / "infra"
    configuration = DEMO / "plans" / plan
    if configuration.is_dir():
        shutil.copytree(configuration, infra)
    infra.mkdir(exist_ok=True)
    shutil.copy(DEMO / "plans" / f"{plan}.json", infra / "plan.json")
    previous = run("aws", "--from-dump", str(DEMO / "aws"), "--ignore", "AWS101", "-o", str(folder / "previous.json"))
    assert previous.returncode == 1, previous.stderr


def test_every_command_line_in_the_examples_runs_on_the_demo_data(gateway: str, tmp_path: Path) -> None:
    found = examples()
    assert {(e.file, e.line) for e in found} == set(EXPECTED), "a command was added or changed: update EXPECTED"
    _workspace(tmp_path, "aws-wrong")
    env = {"PUSHGATEWAY_URL": gateway}
    for example in found:
        argv = demo_argv(example.argv, gateway, env)
        result = run(*argv, cwd=tmp_path)
        assert result.returncode == EXPECTED[(example.file, example.line)], (example, result.stderr[-2000:])
        assert "Traceback" not in result.stderr, example
        _check_outputs(example, argv, tmp_path, result.stdout, gateway)


def _check_outputs(example: Example, argv: list[str], folder: Path, stdout: str, gateway: str) -> None:
    """What the example's command was meant to leave is there and reads as its format says."""
    if "--job" in argv:
        job = argv[argv.index("--job") + 1]
        assert any(name == "fabriccheck_findings" for name, _, _ in served(gateway, job)), example
    if argv[argv.index("--format") + 1 if "--format" in argv else 0] == "json" and "-" in argv:
        assert json.loads(stdout)["schema_version"] == 1
    outputs = [argv[i + 1] for i, word in enumerate(argv) if word in ("-o", "--output") and argv[i + 1] != "-"]
    for name in outputs:
        text = (folder / name).read_text()
        if name.endswith(".sarif"):
            assert not list(jsonschema.Draft4Validator(SARIF_SCHEMA).iter_errors(json.loads(text)))
        elif name.endswith(".xml"):
            assert ET.fromstring(text).find(".//failure") is not None  # the wrong plan's findings fail the tests
        elif name.endswith(".json"):
            assert json.loads(text)["schema_version"] == 1
        else:
            assert text.strip(), name


@pytest.mark.parametrize("plan", ["aws-correct", "azure-correct", "gcp-correct"])
def test_the_plan_gates_pass_a_correct_plan(tmp_path: Path, plan: str) -> None:
    _workspace(tmp_path, plan)
    gates = [e for e in examples() if e.argv[1:2] == ("plan",)]
    assert len(gates) == 2
    for gate in gates:
        result = run(*gate.argv[1:], cwd=tmp_path)
        assert result.returncode == 0, (gate, result.stderr)


def test_the_extractor_finds_commands_wherever_an_example_writes_them() -> None:
    script = "if [ -f a ]; then fabriccheck diff a b \\\n  -o c.md; fi && fabriccheck demo | tee x # fabriccheck no"
    assert list(_shell_commands(script)) == [("fabriccheck", "diff", "a", "b", "-o", "c.md"), ("fabriccheck", "demo")]
    assert list(_docker_runs("docker run --rm -e X \\\n  registry.example.com/fabriccheck:1.0 demo -f json")) == [
        ("fabriccheck", "demo", "-f", "json")
    ]
    assert demo_argv(("fabriccheck", "gcp", "--organization", "1", "-o", "-"), "http://gw", {}) == [
        "gcp",
        "--from-dump",
        str(DEMO / "gcp"),
        "-o",
        "-",
    ]


# ------------------------------------------------------------------------------------------ the Dockerfile


def _instructions(dockerfile: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, its arguments), continuation lines joined and comments dropped."""
    lines = [line for line in dockerfile.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    return [(line.split(" ", 1)[0], line.split(" ", 1)[1]) for line in joined.splitlines() if line.strip()]


def test_the_dockerfile_is_slim_non_root_and_enters_fabriccheck() -> None:
    steps = _instructions((EXAMPLES / "Dockerfile").read_text())
    [base] = [args for op, args in steps if op == "FROM"]
    assert re.fullmatch(r"python:3\.(1[1-9])-slim", base), base  # requires-python >= 3.11
    [user] = [args for op, args in steps if op == "USER"]
    assert user.isdigit() and int(user) >= 1000
    assert [args for op, args in steps if op == "ENTRYPOINT"] == ['["fabriccheck"]']
    ops = [op for op, _ in steps]
    assert ops.index("USER") > max(i for i, op in enumerate(ops) if op == "RUN")  # nothing runs as root after


def _copy(source: Path, target: Path, many: bool) -> None:
    """Docker's COPY: a file into a folder (target ending in / or several sources) or to a name; a folder's
    contents into the target folder."""
    assert source.exists(), f"COPY {source}: not in the build context"
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        destination = target / source.name if many else target
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, destination)
