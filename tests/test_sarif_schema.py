"""The SARIF output, validated against the SARIF 2.1.0 JSON schema (vendored: tests/schemas/README.md), with
the parts code scanning relies on: rule help and help URI, stable fingerprints, suppressions for waivers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from fabriccheck import baseline, flow
from fabriccheck.cli import demo_inventory
from fabriccheck.model import CollectionError
from fabriccheck.reports import render
from fabriccheck.waivers import Waiver

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text())


def sarif(options: flow.Options, errors: bool = False) -> dict[str, Any]:
    inventory = demo_inventory()
    if errors:
        inventory.errors.append(CollectionError(call="DescribeInstances", code="AccessDenied", message="denied"))
    document: dict[str, Any] = json.loads(render(flow.run(inventory, options), "sarif"))
    return document


def test_output_is_valid_sarif_2_1_0() -> None:
    validator = jsonschema.Draft4Validator(SCHEMA)
    waived = flow.Options(waivers=[Waiver(rule="AWS110", resources=["*"], reason="on purpose")], waivers_file="w")
    some = flow.run(demo_inventory(), flow.Options()).findings[::2]
    baselined = flow.Options(baseline=baseline.build(some), baseline_file="b.json")
    documents = (sarif(flow.Options()), sarif(waived), sarif(baselined), sarif(flow.Options(), errors=True))
    assert {r.get("baselineState") for r in documents[2]["runs"][0]["results"]} == {"new", "unchanged"}
    for document in documents:
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
        assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]


def test_the_schema_catches_what_it_should() -> None:
    document = sarif(flow.Options())
    document["runs"][0]["results"][0]["level"] = "fatal"  # not a SARIF level
    assert list(jsonschema.Draft4Validator(SCHEMA).iter_errors(document))


def test_rules_have_help_and_results_stable_fingerprints_and_suppressions() -> None:
    first = sarif(flow.Options())["runs"][0]
    for rule in first["tool"]["driver"]["rules"]:
        assert rule["help"]["text"] and rule["help"]["markdown"] and rule["helpUri"].startswith("https://")
    prints = [r["partialFingerprints"]["fabriccheck/v1"] for r in first["results"]]
    assert len(set(prints)) == len(prints)  # one per finding
    again = sarif(flow.Options(workload="llm-8b-ddp"))["runs"][0]  # another run, other numbers in messages
    assert [r["partialFingerprints"] for r in again["results"]] == [r["partialFingerprints"] for r in first["results"]]
    waiver = Waiver(rule="AWS110", resources=["*"], reason="on purpose", expires="2099-01-01")
    waived = sarif(flow.Options(waivers=[waiver], waivers_file="w.yaml"))["runs"][0]["results"]
    suppressed = [r for r in waived if "suppressions" in r]
    assert suppressed and {r["ruleId"] for r in suppressed} == {"AWS110"}
    assert suppressed[0]["suppressions"][0] == {
        "kind": "external",
        "status": "accepted",
        "justification": "on purpose (until 2099-01-01)",
        "properties": {"source": "w.yaml #1"},
    }
