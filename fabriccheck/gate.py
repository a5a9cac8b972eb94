"""The gate of one scanning command, settled before anything is collected.

The command's defaults, a config file, FABRICCHECK_* variables and the flags given (later wins) decide the
options and --fail-on (config.py). Here they are settled once per run, and everything that can be checked
without a cloud is checked now, so that a bad file or a typo fails in a second, not after a long scan:
- rule names in --select, --ignore, --severity and the waivers are names the rule book has;
- the waivers and the baseline are read;
- no output (--output, --save-inventory, --write-baseline) is one of the files the run reads;
- the earlier report of `--previous` is read (a scheduled job may name its last report as both --previous and
  --output: it is read now, and the new one is written over it only once it is made).
What was settled is also recorded as the report's `gate` (config.Gate): each setting with where it came from,
so a config file a pull request adds (fail-on never, every cluster ignored, one harmless rule) shows in every
report. `--isolated` (FABRICCHECK_ISOLATED=1) reads no config file at all.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabriccheck.errors import FabricCheckError, OutputOverInput

if TYPE_CHECKING:
    from fabriccheck.config import Config, Gate
    from fabriccheck.evidence.judge import Evidence
    from fabriccheck.flow import Options
    from fabriccheck.outputs import Outputs
    from fabriccheck.report import Report
    from fabriccheck.rulebook import EvidenceRule, RuleMeta
    from fabriccheck.targets import Target


@dataclasses.dataclass(frozen=True)
class Invocation:
    """A command as it was run, all the gate needs of it (the CLI makes one from its context; a library caller
    may build one): every parameter's value; the ones given on the command line or from the environment, not
    left at their defaults, in the command's order; each parameter's default in this command (`demo`'s --fail-on
    is never); and the option that sets each parameter (`--format` for `fmt`)."""

    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    given: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    flags: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def was_given(self, name: str) -> bool:
        """Whether an option was given on the command line (or from the environment), not left at its default."""
        return name in self.given

    def default(self, name: str, fallback: str) -> str:
        """A parameter's default in this command, else `fallback`."""
        default = self.defaults.get(name)
        if default is None:
            return fallback
        return str(default.value if isinstance(default, StrEnum) else default)


@dataclasses.dataclass
class Settled:
    options: Options  # the gate recorded in options.gate
    fail_on: str
    write_baseline: Path | None
    previous: tuple[str, Report] | None = None  # --previous: where the earlier report was read, and it
    targets: list[Target] = dataclasses.field(default_factory=list)  # where the reports go (ScanOptions.settle)


# The command's own defaults when it has no such parameter: a scan fails on errors and prices this workload.
FAIL_ON = "error"
WORKLOAD = "llm-70b-fsdp"


def effective(invocation: Invocation) -> tuple[Config, dict[str, Any]]:
    """The effective settings of a command (and its parameters): its own defaults, the config file (none with
    --isolated), FABRICCHECK_* variables, then the flags given on its command line."""
    from fabriccheck import config
    from fabriccheck.settings import KEYS

    params = dict(invocation.params)
    flags: dict[str, Any] = {}
    for key in KEYS:
        if key.param in params and invocation.was_given(key.param):  # a command without the flag: file and env only
            value = params[key.param]
            flags[key.name] = value.value if isinstance(value, StrEnum) else value
    # The command's own defaults: `demo` never fails unless told to.
    defaults = {
        "fail-on": invocation.default("fail_on", FAIL_ON),
        "workload": invocation.default("workload", WORKLOAD),
    }
    found = config.resolve(
        defaults,
        flags,
        cwd=Path.cwd(),
        env=os.environ,
        config_file=params.get("config"),
        isolated=bool(params.get("isolated")),
    )
    return found, params


def settle(invocation: Invocation) -> Settled:
    """The shared gate layer of every scanning command (see the module's docstring): the options to judge with,
    --fail-on, and the baseline to write."""
    from fabriccheck import config, waivers
    from fabriccheck.flow import Options
    from fabriccheck.jsonfiles import reading

    found, params = effective(invocation)
    check_one_stdin(params)
    value = found.value
    waivers_path: Path | None = value("waivers")
    with reading(waivers_path or "the waivers"):  # a value nested too deeply even to quote: one line naming it
        loaded = waivers.load(waivers_path) if waivers_path is not None else []
    check_rule_names(found, loaded, waivers_path)
    baseline_path: Path | None = params.get("baseline")
    write_baseline: Path | None = params.get("write_baseline")
    check_outputs(params, found, baseline_path)
    judged_against = baseline_path or write_baseline  # --write-baseline alone judges against what it writes
    against = "flag --baseline" if baseline_path else "flag --write-baseline"
    allow_incomplete = "flag --allow-incomplete" if invocation.was_given("allow_incomplete") else "default"
    gate = config.Gate.of(
        found,
        {
            "allow-incomplete": (bool(params.get("allow_incomplete")), allow_incomplete),
            "baseline": (judged_against, "default" if judged_against is None else against),
        },
    )
    options = Options(
        workload=value("workload"),
        price_per_gpu_hour=value("price-per-gpu-hour"),
        cluster_tag=value("cluster-tag"),
        rules_dirs=list(value("rules-dir")),
        select=list(value("select")),
        ignore=list(value("ignore")),
        severity=dict(value("severity")),
        roles=dict(value("roles")),
        waivers=loaded,
        waivers_file=str(waivers_path or ""),
        baseline=_baseline(baseline_path),
        baseline_file=str(baseline_path or ""),
        gate=gate,
    )
    return Settled(options, str(value("fail-on")), write_baseline, previous_report(params))


# Every input that may be `-` (standard input), as the error names it.
_STDIN_READERS = {
    "plan_file": "the plan",
    "inventory_file": "the inventory",
    "file": "the evidence file",
    "paths": "--manifests",  # k8s --manifests PATH ...
    "previous": "--previous",
}


def check_one_stdin(params: Mapping[str, Any]) -> None:
    """At most one input reads standard input: a second would find it empty and judge nothing."""
    readers = []
    for name, what in _STDIN_READERS.items():
        value = params.get(name)
        values = value if isinstance(value, list | tuple) else [value]
        readers += [what] * sum(1 for v in values if v is not None and str(v) == "-")
    if len(readers) > 1:
        raise FabricCheckError(
            f"{readers[0]} and {readers[1]} both read standard input (-): give all but one of them as files"
        )


def previous_report(params: Mapping[str, Any]) -> tuple[str, Report] | None:
    """The earlier JSON report of --previous (`-`: standard input), checked as `merge` checks its parts; one line
    naming the option for a missing or bad file."""
    from fabriccheck.report import load_report

    path: Path | None = params.get("previous")
    if path is None:
        return None
    stdin = str(path) == "-"
    try:
        return ("standard input" if stdin else str(path)), load_report(path)
    except FabricCheckError as exc:
        raise FabricCheckError(f"--previous: {exc}") from None


def _baseline(path: Path | None) -> Any:
    from fabriccheck import baseline
    from fabriccheck.jsonfiles import reading

    if path is None:
        return None
    with reading(path):
        return baseline.load(path)


def check_rule_names(found: Config, loaded: list[Any], waivers_path: Path | None) -> None:
    """Every rule named in the selection, the severity overrides and the waivers is one the rule book has (the
    built-in rules and --rules-dir's), as --select requires: a name nothing has is an error naming where it was
    set. The rules are loaded only when something names one."""
    from fabriccheck import config, waivers

    named = any(found.settings[n].value for n in ("select", "ignore", "severity"))
    if not named and not any(w.rule for w in loaded):
        return
    rules = _rule_book(found)
    config.check_rule_names(found, rules)
    if waivers_path is not None:
        waivers.check_rules(loaded, {i for rule in rules for i in rule.finding_ids()}, waivers_path)


def _rule_book(found: Config) -> list[RuleMeta]:
    """Every rule a name may name: the inventory rules (built-in and --rules-dir's) and the evidence rules, so
    one config or waivers file serves the scans and nccl-log / nccl-tests."""
    from fabriccheck import examples, rulebook

    dirs = found.value("rules-dir")
    return [*(examples.load_rules(dirs) if dirs else rulebook.builtin_rules()), *rulebook.builtin_evidence_rules()]


def write_baseline(report: Report, path: Path, options: Options, outputs: Outputs) -> None:
    """Record today's findings (staged in `outputs`, put in place with the report); without --baseline, this run is
    judged against what it writes."""
    from fabriccheck import baseline

    outputs.add(path, baseline.dump(report.findings), "--write-baseline")
    if options.baseline is None:
        report.baseline = baseline.apply(report.findings, baseline.build(report.findings), str(path))
        report.summary.in_baseline = sum(1 for f in report.findings if f.baseline == "existing")


def carried(parts: list[tuple[str, Gate | None]]) -> Gate:
    """What the parts of a merge were judged under (selection, severity, roles, waivers, baseline): the value
    every part shares, or, when they differ, each part's value by its file."""
    from fabriccheck.config import Gate, GateSetting

    settings: dict[str, GateSetting] = {}
    for name in ("select", "ignore", "severity", "roles", "waivers", "baseline", "rules-dir", "cluster-tag"):
        values = {where: gate.setting(name).value if gate else None for where, gate in parts}
        distinct: list[Any] = []
        for value in values.values():
            if value not in distinct:
                distinct.append(value)
        if len(distinct) == 1:
            settings[name] = GateSetting(value=distinct[0], source="every part")
        else:
            settings[name] = GateSetting(value=values, source="the parts differ (value by part)")
    return Gate(settings=settings)


def with_exit_flags(invocation: Invocation, gate: Gate | None) -> Gate:
    """`gate` with the command's own --fail-on and --allow-incomplete (merge's: they decide its exit)."""
    from fabriccheck.config import Gate, GateSetting

    settings = dict(gate.settings) if gate is not None else {}
    for name, param in (("fail-on", "fail_on"), ("allow-incomplete", "allow_incomplete")):
        value = invocation.params.get(param)
        source = f"flag --{name}" if invocation.was_given(param) else "default"
        settings[name] = GateSetting(value=value.value if isinstance(value, StrEnum) else value, source=source)
    return Gate(settings=settings)


# ---------------------------------------------------------------------------------------------- outputs

# The options that write a file, and what each writes.
_OUTPUTS = (("output", "--output", "the report"), ("save_inventory", "--save-inventory", "the inventory"))
_WRITE_BASELINE = ("write_baseline", "--write-baseline", "the baseline")


def check_outputs(params: dict[str, Any], found: Config, baseline_path: Path | None) -> None:
    """No output of the run is a file it reads: the report, saved inventory or baseline written over a dump
    file, the waivers, the config file, the baseline, a rule or workload file, the plan or the inventory being
    checked would destroy the input (or judge what it just wrote). Two outputs on one file are refused too."""
    from fabriccheck.outputs import same_file
    from fabriccheck.targets import STDOUT, check_writable

    inputs = list(_inputs(params, found, baseline_path))
    outputs: list[tuple[Path, str, str]] = []
    for name, flag, what in (*_OUTPUTS, _WRITE_BASELINE):
        given = params.get(name)
        for path in given if isinstance(given, list | tuple) else [given] if given else []:  # --output: repeatable
            if str(path) != STDOUT:
                outputs.append((Path(path), flag, what))
    for index, (path, flag, what) in enumerate(outputs):
        if flag != "--output":  # the report's outputs are checked with their formats (targets.resolve)
            check_writable(path, flag)
        for other, other_flag, _ in outputs[index + 1 :]:
            if same_file(path, other):
                raise FabricCheckError(f"{flag} {path} and {other_flag} {other} name the same file: choose two")
        for label, source, folder in inputs:
            if flag == "--write-baseline" and source == baseline_path:
                continue  # reading a baseline and writing its successor over it is how one tightens a gate
            if _inside(path, source) if folder else same_file(path, source):
                raise OutputOverInput(f"{flag} {path} is {label}: write {what} elsewhere")


def check_output_reads(output: Path | None, inputs: list[tuple[str, Path | None]]) -> None:
    """The --output of a command with one output and no gate (diff, estimate) is none of the files it reads
    (`inputs`: what each is, and its path): one line naming both."""
    from fabriccheck.outputs import same_file

    if output is None or str(output) == "-":
        return
    for label, source in inputs:
        if source is not None and str(source) != "-" and same_file(output, source):
            raise OutputOverInput(f"--output {output} is {label}: write it elsewhere")


def _inputs(params: dict[str, Any], found: Config, baseline_path: Path | None) -> Iterator[tuple[str, Path, bool]]:
    """What the run reads: (what it is, its path, whether the path is a folder read whole)."""
    workload = str(found.value("workload") or "")
    workload_file = workload if workload.endswith((".yaml", ".yml", ".toml")) else None
    files: list[tuple[str, Any]] = [
        ("the config file in use", found.file),
        ("the waivers file being read (--waivers)", found.value("waivers")),
        ("the baseline being read (--baseline)", baseline_path),
        ("the inventory being checked", params.get("inventory_file")),
        ("the plan being checked", params.get("plan_file")),
        ("the evidence being judged", params.get("file")),  # nccl-log, nccl-tests
        ("the workload file being read (--workload)", workload_file),
        ("the kubeconfig being read (--kubeconfig)", params.get("kubeconfig")),
        ("the reservation topology being read (--reservation-topology)", params.get("reservation_topology")),
    ]
    manifests = params.get("paths") or [] if params.get("manifests") else []
    for manifest in manifests:  # k8s --manifests PATH ...: files, or folders read whole
        files.append(("a manifest being judged (--manifests)", manifest))
    for script in params.get("scripts") or []:  # slurm --scripts PATH ...: a report over one would replace the script
        files.append(("a job script being judged (--scripts)", script))
    for label, path in files:
        if path is not None and str(path) != "-":
            yield label, Path(path), Path(path).is_dir()
    folders: list[tuple[str, Any]] = [
        ("a file in the dump folder being read (--from-dump)", params.get("from_dump")),
        ("a file in the cloud's dump folder being read (--cloud-dump)", params.get("cloud_dump")),
        ("a file in the configuration being read (--terraform-dir)", params.get("terraform_dir")),
        ("a file in the nodes' dump folder being read (--nodes-from)", params.get("nodes_from")),
        *(("a file in a rules folder being read (--rules-dir)", d) for d in found.value("rules-dir") or ()),
    ]
    for label, path in folders:
        if path is not None:
            yield label, Path(path), True


def _inside(path: Path, folder: Path) -> bool:
    """`path` is an existing file somewhere under `folder` (a dump or rules folder, read whole)."""
    try:
        return path.is_file() and Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))
    except OSError:
        return False

# ---------------------------------------------------------------------------------------------- evidence
# The gate on evidence: a scan's selection, severity overrides, waivers and baselines, applied to the findings of
# `nccl-log` and `nccl-tests`. The settings are settled as a scan's are (settle), so one config file and one
# waivers file serve the cloud audit and the evidence from the same cluster. A token may name any rule (a
# selection shared with scans); the rules of the command are those it leaves on, and a selection that leaves none
# is an error: a gate that runs no rule must not pass.


def _evidence_book() -> list[RuleMeta]:
    from fabriccheck import rulebook

    return [*rulebook.builtin_rules(), *rulebook.builtin_evidence_rules()]


def evidence_rules(kind: str, options: Options) -> list[EvidenceRule]:
    """The evidence rules of `kind` (nccl-log, nccl-tests) that --select / --ignore leave on."""
    from fabriccheck import errors, rulebook
    from fabriccheck.rulebook import EvidenceRule

    own = [r for r in rulebook.builtin_evidence_rules() if r.evidence == kind]
    if not options.select and not options.ignore:
        return own
    chosen = rulebook.select_rules(_evidence_book(), options.select, options.ignore)
    left = [r for r in chosen if isinstance(r, EvidenceRule) and r.evidence == kind]
    if not left:
        raise errors.usage(f"--select / --ignore leave no {kind} rule to run (see: fabriccheck rules)")
    return left


def apply_to_evidence(
    ev: Evidence, options: Options, write_baseline: Path | None, ran: list[EvidenceRule]
) -> bytes | None:
    """Severity overrides, waivers and the baseline on `ev`'s findings, as a scan applies them; the baseline to
    write (--write-baseline), which the caller writes beside the report. Without --baseline, a run that writes
    one is judged against what it writes."""
    import datetime as dt

    from fabriccheck import baseline, config, rulebook, waivers

    if options.severity:
        config.override_severity(ev.findings, options.severity, _evidence_book())
    if options.waivers:
        today = options.today or dt.datetime.now(dt.UTC).date()
        ids = rulebook.active_ids(ran)
        ev.waivers = waivers.apply(ev.findings, options.waivers, options.waivers_file, today, ids)
        ev.notes += waivers.notes(ev.waivers)
    written = baseline.dump(ev.findings) if write_baseline is not None else None
    if options.baseline is not None:
        ev.baseline = baseline.apply(ev.findings, options.baseline, options.baseline_file)
    elif write_baseline is not None:
        ev.baseline = baseline.apply(ev.findings, baseline.build(ev.findings), str(write_baseline))
    return written
