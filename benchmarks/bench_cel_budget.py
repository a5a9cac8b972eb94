"""Benchmark: how long the costliest CEL condition the evaluation budget lets start takes (fabriccheck.celbudget).

A signal is seen between evaluations, so the longest one the budget admits is how long Ctrl-C may wait in the
judging stage. tests/test_cel_budget.py checks the budget's arithmetic (this condition is exactly at it); this
measures the time, in this process's CPU time (wall time on a shared machine mostly measures the neighbours).
Target: well within a second.

Run: python benchmarks/bench_cel_budget.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import time

from fabriccheck import celbudget, rulebook

parser = argparse.ArgumentParser()
parser.add_argument("--repeat", type=int, default=5)
repeat = parser.parse_args().repeat
condition = "[" + ", ".join(map(str, range(celbudget.BUDGET))) + "].exists(x, x < 0)"
cost = celbudget.cost_of(condition)
assert cost is not None and cost.steps({}) == celbudget.BUDGET
program = rulebook.cel_module().compile(condition)
runs = []
for _ in range(repeat):
    started = time.process_time()
    assert program.execute({}) is False
    runs.append(time.process_time() - started)
print(f"a condition at the budget ({celbudget.BUDGET:,} steps): best {min(runs) * 1000:.0f} ms, "
      f"worst {max(runs) * 1000:.0f} ms CPU over {repeat} runs (target well within 1 s)")  # fmt: skip
