"""Each evaluation of a rule's CEL condition has a cost budget (issue 18, item 11; fabriccheck.celbudget).

The user rules are the built-in AWS121 (rules/aws/) with another id and a comprehension added to its
condition; the CLI runs judge the demo's account (fixtures/demo/aws)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run

from fabriccheck import celbudget, examples, rulebook
from fabriccheck.errors import FabricCheckError

ROOT = Path(__file__).resolve().parent.parent
AWS121 = ROOT / "rules" / "aws" / "AWS121-spread-placement-group.yaml"


def _numbers(count: int) -> str:
    return "[" + ", ".join(map(str, range(count))) + "]"


def _rule(folder: Path, rule_id: str, loop: str) -> Path:
    """AWS121 under `rule_id`, its condition ANDed with `loop` (evaluated first)."""
    folder.mkdir(exist_ok=True)
    lines = []
    for line in AWS121.read_text().splitlines():
        if line.startswith("id: "):
            line = f"id: {rule_id}"
        elif line.startswith("condition: "):
            line = f"condition: >-\n  ({loop}) && ({line.removeprefix('condition: ')})"
        lines.append(line)
    path = folder / f"{rule_id}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_issues_nested_all_is_refused_at_load_naming_its_file(tmp_path: Path) -> None:
    """Three nested all() over a thousand numbers: 10 s per evaluation, and Ctrl-C waited. Now refused before any
    evaluation, in about the time the command takes to start."""
    numbers = _numbers(1_000)
    path = _rule(tmp_path / "rules", "X911", f"{numbers}.all(x, {numbers}.all(y, {numbers}.all(z, x + y + z >= 0)))")
    line = one_clean_line(run("demo", "--rules-dir", str(path.parent)))
    # Refused by counting the loops at load (the error names them), not by evaluating (10 s each, per cluster).
    assert line.startswith(f"fabriccheck: error: {path}: rule X911: condition over its evaluation budget: ")
    assert "3 nested comprehension(s)" in line and "(budget 100,000 per evaluation)" in line


def test_a_loop_within_budget_is_judged_as_before(tmp_path: Path) -> None:
    path = _rule(tmp_path / "rules", "X912", f"{_numbers(50)}.exists(x, x == 7)")
    result = run("demo", "-f", "json", "--rules-dir", str(path.parent), "--select", "AWS121", "--select", "X912")
    assert result.returncode == 0, result.stderr
    flagged = {f["rule"]: f["resources"] for f in json.loads(result.stdout)["findings"]}
    assert flagged["X912"] == flagged["AWS121"]  # the same verdicts: the loop is always true


def test_an_evaluation_over_budget_on_the_facts_it_is_given_is_refused(tmp_path: Path) -> None:
    """Within budget by its own lists, over it on facts with longer lists: refused before CEL starts."""
    path = _rule(tmp_path / "rules", "X913", "cluster.types.all(a, cluster.types.all(b, cluster.types.all(c, true)))")
    (rule,) = [r for r in examples.load_rules([path.parent]) if r.id == "X913"]
    types = [{"name": f"t{i}"} for i in range(60)]
    facts: dict[str, Any] = {"cluster": {"types": types, "fabric_cluster": True}}
    # 60 types and AWS121's own two-element list: lists of up to 62, 62^3 steps.
    expected = rf"{path}: rule X913: condition over its evaluation budget: .* 62 elements make up to 238,328 steps"
    with pytest.raises(FabricCheckError, match=expected):
        rule.matches(facts)
    fewer = {"types": types[:40], "fabric_cluster": True, "placement": {"strategy": "spread"}}
    assert rule.matches({"cluster": fewer}) is True  # 42^3 = 74,088 steps: judged


def test_the_costliest_condition_the_budget_admits_is_exactly_at_it() -> None:
    """A signal is seen between evaluations: the longest one the budget lets start must be short. Its time is
    measured by benchmarks/bench_cel_budget.py (a test asserting it failed on a busy machine: issue 30, item 6)."""
    at_budget = celbudget.cost_of(f"{_numbers(celbudget.BUDGET)}.exists(x, x < 0)")
    assert at_budget is not None and at_budget.steps({}) == celbudget.BUDGET
    celbudget.check(at_budget, {}, "test")
    over = celbudget.cost_of(f"{_numbers(celbudget.BUDGET + 1)}.exists(x, x < 0)")
    with pytest.raises(FabricCheckError, match="over its evaluation budget"):
        celbudget.check(over, {}, "test")
    program = rulebook.cel_module().compile(f"{_numbers(celbudget.BUDGET)}.exists(x, x < 0)")
    assert program.execute({}) is False


@pytest.mark.parametrize(
    ("condition", "depth"),
    [
        ("node.id == 'x.all(y, true)'", None),  # inside a string: no loop
        ("size(node.interfaces) > 2", None),
        ("[1, 2].all(x, x > 0) && [3].exists(y, y == 3)", 1),  # side by side
        ("[1].all(x, [2].all(y, [3].all(z, true)))", 3),  # nested
        ("[1].map(x, [1]).all(y, y.all(z, z > 0))", 2),  # over a macro's result, and inside
        ("([1].map(x, x)).all(y, y > 0)", 2),
    ],
)
def test_the_depth_read_from_a_condition(condition: str, depth: int | None) -> None:
    cost = celbudget.cost_of(condition)
    assert (cost.depth if cost else None) == depth


def test_a_raw_string_ending_in_a_backslash_hides_no_comprehension_from_the_budget(tmp_path: Path) -> None:
    """Issue 29 item 9: in the raw string `r"\\"` the backslash escapes nothing (github.com/google/cel-spec
    doc/langdef.md, "String and Bytes Values": a raw string "does not interpret escape sequences"). Read as an
    escaped quote, the literal ran on to the next quote and hid three nested all() over a thousand numbers from
    the budget: 167 s of evaluation. Now refused at load, as without the string."""
    numbers = _numbers(1_000)
    loop = f'size(r"\\") == 1 && {numbers}.all(x, {numbers}.all(y, {numbers}.all(z, x + y + z >= 0))) && "" == ""'
    path = _rule(tmp_path / "rules", "X913", loop)
    line = one_clean_line(run("demo", "--rules-dir", str(path.parent)))
    assert line.startswith(f"fabriccheck: error: {path}: rule X913: condition over its evaluation budget: ")
    assert "3 nested comprehension(s)" in line


@pytest.mark.parametrize(
    ("condition", "text"),
    [
        ('r"\\" == x', '"" == x'),  # raw: the backslash is the whole literal
        ('"a\\"b" == x', '"" == x'),  # not raw: \\" is an escaped quote
        ("br'\\' + '''it's''' + x", '"" + "" + x'),  # raw bytes; a triple-quoted literal holds a single quote
        ("x // it's [1].all(y, y)\n && z", "x \n && z"),  # a comment: its quote opens no literal
        ('attr + r"[1].all(x, x)"', 'attr + ""'),  # the r of `attr` ends a name; the r before a quote is a prefix
    ],
)
def test_string_literals_and_comments_are_blanked_as_cel_lexes_them(condition: str, text: str) -> None:
    """CEL's lexis (github.com/google/cel-spec doc/langdef.md, "Syntax": STRING_LIT, BYTES_LIT, COMMENT)."""
    assert celbudget.blanked(condition) == text
