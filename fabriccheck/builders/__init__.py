"""What makes the project's generated files from a checkout: the demo's AWS, Azure and GCP estates and Terraform plans
(fixtures/demo/), the rule pages (docs/rules/), the report schema's page (docs/json-schema.md) and the parsed
cache of the shipped YAML (fabriccheck/data/parsed.json). The scripts under tools/ run them; the tests import them
from here. Each reads and writes the checkout (checkout()), never an installed copy's folder."""

from __future__ import annotations

from pathlib import Path


def _is_checkout(folder: Path) -> bool:
    return (folder / "pyproject.toml").is_file() and (folder / "rules").is_dir() and (folder / "fabriccheck").is_dir()


def checkout() -> Path:
    """The checkout to build in: the one this package sits in (tools/ scripts, an editable install), else the one
    the current folder is in (the tests, run from the repository against an installed wheel, as .ci/run does)."""
    own = Path(__file__).resolve().parents[2]  # fabriccheck/builders/__init__.py: two folders down
    if _is_checkout(own):
        return own
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if _is_checkout(folder):
            return folder
    raise SystemExit(f"fabriccheck builders: {here} is not inside a fabriccheck checkout (run from the repository)")
