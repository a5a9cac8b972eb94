"""An evidence rule's examples, judged as `nccl-log` or `nccl-tests` would judge them, with that rule alone: what
`fabriccheck rules ID` and the tests run (inventory rules' examples: fabriccheck/examples.py)."""

from __future__ import annotations

import dataclasses

from fabriccheck.errors import FabricCheckError
from fabriccheck.evidence import bandwidth, expect, judge, nccl_log, nccl_tests
from fabriccheck.rulebook import EvidenceExample, EvidenceRule


def run_example(rule: EvidenceRule, example: EvidenceExample) -> list[str]:
    """The resources `rule` alone flags in `example`'s evidence, sorted. An option the command does not take is an
    error naming the rule file and the example."""
    lines = example.text.splitlines(keepends=True)
    options = dict(example.options)
    provider = options.pop("provider", None)
    name = f"example {example.name!r}"
    try:
        if rule.evidence == "nccl-log":
            if options:
                raise TypeError(f"unknown option {sorted(options)[0]}")
            ev = judge.judge_log(nccl_log.read_lines(lines, "example"), provider, rules=[rule])
        else:
            nodes, op = options.pop("nodes", None), options.pop("op", None)
            fabric, implied = expect.fabric_from_options(**dataclasses.asdict(expect.FabricOptions(**options)))
            parsed = nccl_tests.parse_lines(lines, "example")
            log = nccl_log.read_lines(lines, "example")
            ev = bandwidth.judge_tests(parsed, fabric, nodes, provider or implied, op, log, rules=[rule])
    except TypeError as exc:
        raise FabricCheckError(f"{rule.path}: {name}: field options: {exc}") from None
    return sorted({r for f in ev.findings for r in f.resources})
