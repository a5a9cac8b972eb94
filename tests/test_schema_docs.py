"""docs/json-schema.md, the JSON report's fields, is generated from `fabriccheck schema` by
tools/build_schema_docs.py: kept in step with the report's models, and saying what the schema says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabriccheck.builders import schema_page as docs
from fabriccheck.schema import report_schema


def test_the_fields_page_matches_the_report_models() -> None:
    assert docs.PAGE.read_text() == docs.build(), "docs/json-schema.md is stale: run python tools/build_schema_docs.py"


def test_every_object_and_field_of_the_schema_is_on_the_page() -> None:
    schema = report_schema()
    page = docs.build(schema)
    for name, obj in [("report", schema), *schema["$defs"].items()]:
        section = page.split(f"{{ #{name.lower()} }}", 1)[1].split("\n## ", 1)[0]
        for value in obj.get("enum", []):  # an enumeration's section names each value
            assert f'`"{value}"`' in section, (name, value)
        for field in obj.get("properties", {}):
            row = next(line for line in section.splitlines() if line.startswith(f"| `{field}` |"))
            assert row.endswith("| yes |") == (field in obj.get("required", [])), (name, field)


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ({"$ref": "#/$defs/Finding"}, "[Finding](#finding)"),
        ({"type": "array", "items": {"$ref": "#/$defs/Range"}}, "array of [Range](#range)"),
        ({"anyOf": [{"type": "number"}, {"type": "null"}]}, "number or null"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "object of integer"),
        ({"enum": ["new", "existing"], "type": "string"}, '`"new"` \\| `"existing"`'),
        ({"const": 1, "type": "integer"}, "`1`"),
    ],
)
def test_types_in_words(spec: dict[str, object], words: str) -> None:
    assert docs.type_of(spec) == words


def test_a_new_field_makes_the_page_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    schema = json.loads(json.dumps(report_schema()))
    schema["$defs"]["Finding"]["properties"]["trend"] = {"type": "string"}
    page = tmp_path / "json-schema.md"
    page.write_text(docs.build())
    monkeypatch.setattr(docs, "PAGE", page)
    assert docs.main(["--check"]) == 0
    monkeypatch.setattr(docs, "report_schema", lambda: schema)
    assert docs.main(["--check"]) == 1
    assert docs.main([]) == 0 and "| `trend` | string | no |" in page.read_text()
