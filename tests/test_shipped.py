"""The shipped YAML's parsed cache (fabriccheck/shipped.py) holds every shipped file as YAML parses it, and a
text that is not shipped is parsed as it is."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import yaml

from fabriccheck import shipped
from fabriccheck.builders import parsed as shipped_yaml


def test_every_shipped_yaml_file_has_its_parse_in_the_cache() -> None:
    files = shipped_yaml.shipped_files()
    assert len(files) >= 20 and any(p.parent.name == "aws" for p in files)  # the rules and the data tables
    cache = orjson.loads((Path(shipped.__file__).parent / "data" / shipped.CACHE).read_bytes())
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert cache.get(shipped.digest(text)) == yaml.safe_load(text), (
            f"{path} changed since fabriccheck/data/parsed.json was built: run python tools/build_parsed.py"
        )
        assert shipped.load_yaml(text) == yaml.safe_load(text)


def test_a_text_not_shipped_is_parsed_and_each_caller_gets_its_own_document() -> None:
    assert shipped.load_yaml("a: [1, 2]\n") == {"a": [1, 2]}
    with pytest.raises(yaml.YAMLError):
        shipped.load_yaml("a: [1, 2\n")
    text = (Path(shipped.__file__).parent / "data" / "catalog.yaml").read_text(encoding="utf-8")
    first = shipped.load_yaml(text)
    first["types"].clear()  # a caller changing its copy
    assert shipped.load_yaml(text)["types"]


def test_the_version_reports_carry_is_the_packages() -> None:
    import tomllib

    from fabriccheck import __version__

    project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
    assert __version__ == project["version"]
