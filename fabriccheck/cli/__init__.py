"""The command line, the top floor: parse options, run the flow, print, choose the exit code. Nothing else in the
package imports it (tools and tests may).

- app: the typer app, its plain help, the run's outputs (stdout, one line on stderr, a file);
- options: the options several commands share, declared once, and the decorator that adds a group of them;
- clouds (aws, azure, gcp) with live (what they share: SDK extras, the options a dump cannot take, the least
  privilege), and scans (demo, check, plan): the scan commands;
- finish: the end of every scan (judge under the settled gate, write, the exit code); progress: the display;
- offline: merge, estimate, nccl-tests, nccl-log, rules, config;
- entry: `main`, every way a run ends as an exit code and at most one line.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 the check could not be completed
(bad input, bad usage, or an incomplete collection); 130 interrupted (Ctrl-C), with nothing written. Cloud
SDKs and the engine are imported inside the commands, so `fabriccheck --help` stays fast.
"""

from __future__ import annotations

# The command modules register their commands on the app, in the order `fabriccheck --help` lists them.
from fabriccheck.cli import clouds, kube, slurm, scans, offline  # noqa: F401  isort: skip
from fabriccheck.cli.app import app
from fabriccheck.cli.entry import main
from fabriccheck.cli.scans import demo_dir, demo_inventory, demo_plan_inventory

__all__ = ["app", "demo_dir", "demo_inventory", "demo_plan_inventory", "main"]
