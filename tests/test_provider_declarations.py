"""Each provider is declared once (fabriccheck/provider.py): one folder, one registration line (model.Provider).

The neutral rooms (everything under fabriccheck/ but providers/) read a provider's declaration; they neither build a
provider's module name nor name a provider. An AST scan holds them to it, with a short allow-list, a reason each.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from fabriccheck.model import PROVIDERS
from fabriccheck.provider import ProviderDeclaration, clouds, declaration, declarations, declared, registered

PACKAGE = Path(__file__).resolve().parent.parent / "fabriccheck"
PROVIDERS_DIR = PACKAGE / "providers"

# (file under fabriccheck/, the provider name written there as a string): why it stays.
ALLOWED: dict[tuple[str, str], str] = {
    # The registration line itself, and Node's default: an inventory saved before providers were named was AWS's.
    ("model.py", "aws"): "model.Provider is the registration; Node.provider defaults to aws for old inventories",
    ("model.py", "azure"): "model.Provider is the registration line",
    ("model.py", "gcp"): "model.Provider is the registration line",
    ("model.py", "k8s"): "model.Provider is the registration line",
    ("model.py", "slurm"): "model.Provider is the registration line; a flat node's `slurm` key of before is read",
    # Schema versions 1 and 2 held AWS's resources at the top level: reading them is a migration of AWS's shape.
    ("sources/snapshot.py", "aws"): "the migration of a saved inventory written before other clouds existed",
    # "AWS Trainium": a word an accelerator's marketing name carries, not the provider.
    ("catalog.py", "aws"): "a vendor word stripped from accelerator names (AWS Trainium), not the provider",
    # A per-cloud command is a provider's own command: typer wants its options spelled out (cli/clouds.py,
    # cli/kube.py); what it looks up goes through the declaration.
    ("cli/clouds.py", "aws"): "the aws command, passing its own name to the declaration's look-ups",
    ("cli/clouds.py", "azure"): "the azure command, passing its own name to the declaration's look-ups",
    ("cli/clouds.py", "gcp"): "the gcp command, passing its own name to the declaration's look-ups",
    ("cli/kube.py", "k8s"): "the k8s command, passing its own name to the declaration's look-ups",
    ("cli/offline.py", "aws"): "`rules --facts --provider` defaults to aws: a CLI default, kept as it is",
    # The word people know slurm-gcp's nodeset signal by (a display word of a signal, like "asg" or "gke").
    ("reports/names.py", "slurm"): "the short word of the slurm-nodeset signal in a report's cluster names",
}


# The builders make the demo's per-cloud fixtures and pages from a checkout (they were tools/ scripts, which this
# test never read): not rooms a run passes through, so not neutral rooms.
BUILDERS_DIR = PACKAGE / "builders"


def _neutral_files() -> list[Path]:
    return sorted(
        p for p in PACKAGE.rglob("*.py") if PROVIDERS_DIR not in p.parents and BUILDERS_DIR not in p.parents
    )


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings (people's words, not code)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def provider_names_written(source: str) -> list[tuple[int, str]]:
    """(line, what) for each place `source` names a provider as a string or builds a provider's module name."""
    tree = ast.parse(source)
    skipped = _docstrings(tree) | {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            if node.value in PROVIDERS:
                found.append((node.lineno, node.value))
            elif node.value.startswith("fabriccheck.providers."):
                found.append((node.lineno, "module name " + node.value))
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
            if "fabriccheck.providers." in text:
                found.append((node.lineno, "built module name " + text))
    return found


def test_the_scan_sees_a_built_module_name_and_a_provider_string() -> None:
    code = 'import importlib\nm = importlib.import_module(f"fabriccheck.providers.{p}.dump")\nif p == "k8s": pass\n'
    assert provider_names_written(code) == [(2, "built module name fabriccheck.providers..dump"), (3, "k8s")]
    assert provider_names_written('"""Reads aws dumps."""\nx = "aws-ish"\n') == []


def test_no_neutral_room_builds_a_provider_module_name_or_names_a_provider() -> None:
    found = []
    for path in _neutral_files():
        where = path.relative_to(PACKAGE).as_posix()
        for line, what in provider_names_written(path.read_text(encoding="utf-8")):
            if what.startswith(("module name", "built module name")) and where == "provider.py":
                continue  # the one place a declaration's own modules are found
            if where == f"resources/{what}.py":
                continue  # a provider's own room of resources and node parts tags its parts with its name
            if (where, what) not in ALLOWED:
                found.append(f"{where}:{line}: {what}")
    assert found == [], "read the provider's declaration (fabriccheck/provider.py) instead:\n" + "\n".join(found)


# The neutral rooms that may import a provider's resource module (fabriccheck/resources/<provider>.py): the model,
# whose NodePart union registers each provider's part, and the inventory, whose namespaces hold their resources.
RESOURCE_IMPORTERS = {"model.py", "inventory.py"}


def provider_resource_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) for each import of a provider's resource module (fabriccheck.resources.<provider>)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        names = [a.name for a in node.names]
        if isinstance(node, ast.ImportFrom):
            names = [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
        for name in names:
            if name.startswith("fabriccheck.resources.") and name.split(".")[2] in PROVIDERS:
                found.append((node.lineno, ".".join(name.split(".")[:3])))
                break
    return found


def test_no_neutral_stage_reads_a_providers_part_directly() -> None:
    """A neutral stage reads a job on a node through values.JobPart (job_words, rank_env), which the pod and Slurm
    parts implement, not through PodPart: cost.py imported resources.k8s to price a pod's socket settings, so a Slurm
    job script's or an MPIJob launcher's settings could not be priced alike (issue 30's leftover)."""
    assert provider_resource_imports("from fabriccheck.resources.k8s import PodPart\n") == [
        (1, "fabriccheck.resources.k8s")
    ]
    assert provider_resource_imports("from fabriccheck.values import JobPart\n") == []
    found = []
    for path in _neutral_files():
        where = path.relative_to(PACKAGE).as_posix()
        if where.startswith("resources/") or where in RESOURCE_IMPORTERS:
            continue
        found += [f"{where}:{line}: {module}" for line, module in provider_resource_imports(path.read_text("utf-8"))]
    assert found == []


def test_every_allowance_is_still_needed() -> None:
    used = set()
    for path in _neutral_files():
        where = path.relative_to(PACKAGE).as_posix()
        used |= {(where, what) for _, what in provider_names_written(path.read_text(encoding="utf-8"))}
    assert set(ALLOWED) - used == set()


def test_each_registered_provider_is_one_folder_with_one_declaration() -> None:
    folders = sorted(p.name for p in PROVIDERS_DIR.iterdir() if (p / "__init__.py").is_file())
    assert folders == sorted(registered()) == sorted(PROVIDERS)
    for name in registered():
        found = declaration(name)
        assert isinstance(found, ProviderDeclaration)
        assert found.name == name and found.package == f"fabriccheck.providers.{name}"
        assert declared(name) is found
    assert declared("openstack") is None and declared(None) is None
    with pytest.raises(KeyError, match="openstack"):
        declaration("openstack")


@pytest.mark.parametrize("name", PROVIDERS)
def test_a_declaration_finds_the_modules_it_promises(name: str) -> None:
    found = declaration(name)
    assert found.module("support").SUPPORT.name == name
    dump = inspect.signature(found.module("dump").load_dump).parameters
    assert len(dump) >= 2  # (folder, scope, ...): the declaration passes the scope second
    if found.extra is not None:
        assert importlib.util.find_spec(f"{found.package}.collect") is not None
        assert "collect_live" in found.module("collect").__dict__
    if found.privilege is not None:
        assert callable(getattr(found.collector(), found.privilege.function))
    if found.terraform_providers:
        assert callable(found.module("plan").map_plan)


def test_only_the_clouds_sell_instances_and_each_marks_its_dump() -> None:
    assert [c.name for c in clouds()] == ["aws", "azure", "gcp"]
    assert all(c.dump_mark for c in clouds())
    assert {d.unplaced for d in declarations() if not d.sells_instances} == {"named", "pending"}


def test_a_declaration_imports_no_sdk_and_no_module_of_its_provider() -> None:
    """Reading every declaration loads none of a provider's own modules, so judging a saved inventory stays free of
    the SDKs (support() and the dump readers import only what they need, later)."""
    code = (
        "import json, sys\nfrom fabriccheck.provider import declarations\n"
        "[d.name for d in declarations()]\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('boto3', 'botocore', 'azure', 'google', 'kubernetes') or m.count('.') >= 3 and "
        "m.startswith('fabriccheck.providers.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
