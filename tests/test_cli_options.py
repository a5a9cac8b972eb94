"""The CLI's shared options are declared once and spelled alike in every command that takes them; the tables the
cloud commands read (options a dump cannot take, least privilege, what goes to collect_live) name real options.
In this process: the click commands typer builds, and `fabriccheck.cli.main` as the console script calls it."""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
from typing import Any

import pytest
import typer

from fabriccheck.cli import app, main
from fabriccheck.cli.clouds import AwsFleet, AwsLive, AzureLive, GcpLive
from fabriccheck.cli.options import CloudOptions, FabricOptions, ScanOptions
from fabriccheck.provider import declaration, declarations

COMMANDS: dict[str, Any] = typer.main.get_command(app).commands  # type: ignore[attr-defined]
CLOUDS = ("aws", "azure", "gcp")
SCANS = (*CLOUDS, "demo", "check", "plan")


def spelling(command: str, name: str) -> tuple[Any, ...]:
    """How a command spells one option: its flags, metavar, default and help."""
    [param] = [p for p in COMMANDS[command].params if p.name == name]
    return (tuple(param.opts), tuple(param.secondary_opts), param.metavar, param.default, param.help)


def option_names(group: type[Any]) -> list[str]:
    return [f.name for f in dataclasses.fields(group) if f.name != "invocation"]


@pytest.mark.parametrize("name", option_names(ScanOptions))
def test_every_scan_command_spells_a_scan_option_alike(name: str) -> None:
    takers = [c for c in SCANS if any(p.name == name for p in COMMANDS[c].params)]
    assert len(takers) >= 4, takers  # demo has no --allow-incomplete, check and plan no --save-inventory
    spelled = {c: spelling(c, name) for c in takers}
    if name == "fail_on":  # the demo never fails unless told to: its default alone differs
        assert spelled.pop("demo")[3] == "never"
    assert len(set(spelled.values())) == 1, spelled


@pytest.mark.parametrize("name", option_names(FabricOptions))
def test_estimate_and_nccl_tests_describe_a_fabric_in_the_same_words(name: str) -> None:
    assert spelling("estimate", name) == spelling("nccl-tests", name)


@pytest.mark.parametrize("name", [*option_names(CloudOptions), "endpoint_url", "concurrency"])
def test_the_clouds_spell_their_shared_options_alike(name: str) -> None:
    assert len({spelling(c, name) for c in CLOUDS}) == 1


@pytest.mark.parametrize("name", ["fmt", "output", "fail_on", "verbose"])
def test_the_evidence_commands_and_merge_spell_the_report_options_as_a_scan_does(name: str) -> None:
    assert {spelling(c, name) for c in ("nccl-tests", "nccl-log", "merge")} == {spelling("aws", name)}


def test_the_declarations_name_options_the_commands_have() -> None:
    declared = [d for d in declarations() if d.live_only or d.privilege]
    assert {d.name for d in declared} == set(CLOUDS)
    for provider in declared:
        names = {p.name for p in COMMANDS[provider.name].params}
        assert {e.param for e in provider.live_only} <= names, provider.name
        assert set(provider.privilege.shaping if provider.privilege else ()) <= names, provider.name


@pytest.mark.parametrize(("provider", "live"), [("aws", AwsLive), ("azure", AzureLive), ("gcp", GcpLive)])
def test_a_live_group_is_named_as_collect_live_names_its_keywords(provider: str, live: type[Any]) -> None:
    collect = declaration(provider).collector()
    keywords = inspect.signature(collect.collect_live).parameters
    assert set(option_names(live)) <= set(keywords)
    if provider == "aws":
        assert "accounts" in keywords  # what AwsFleet.plan() gives
        privilege = declaration("aws").privilege
        assert privilege is not None and set(option_names(AwsFleet)) == set(privilege.shaping)


@pytest.mark.parametrize("cloud", CLOUDS)
def test_both_spellings_print_the_clouds_own_least_privilege(cloud: str, capsys: pytest.CaptureFixture[str]) -> None:
    printed = []
    for flag in ("--print-role", "--print-iam-policy"):
        assert main([cloud, flag]) == 0
        printed.append(json.loads(capsys.readouterr().out))
    assert printed[0] == printed[1]
    key = {"aws": "Statement", "azure": "Actions", "gcp": "includedPermissions"}[cloud]
    assert key in printed[0]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["aws", "--print-role", "-r", "x"], "--print-role and --region cannot be used together (it prints the policy"),
        (["azure", "--print-iam-policy", "-g", "g"], "--print-iam-policy and --resource-group cannot be used together"),
    ],
)
def test_the_spelling_given_is_the_one_an_error_names(
    args: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    assert capsys.readouterr().err.startswith(f"fabriccheck: error: {line}")


def test_a_fabric_by_hand_in_estimate_is_eight_gpus_and_nics_of_400_gbps_over_ib(
    capsys: pytest.CaptureFixture[str],
) -> None:
    outputs = []
    for extra in ([], ["--gpus-per-node", "8", "--nics", "8", "--nic-gbps", "400", "--transport", "ib"]):
        assert main(["estimate", "--nodes", "4", "--gpu", "H100", "--state", "nics=2", "-f", "json", *extra]) == 0
        outputs.append(json.loads(capsys.readouterr().out))
    assert outputs[0] == outputs[1]


def test_the_workload_help_names_every_preset() -> None:
    """The --workload help lists the presets by hand (the CLI's options import no penalty code); every preset the
    penalty knows is named there, so a new one is not hidden from --help."""
    from fabriccheck.cli.options import WorkloadOpt
    from fabriccheck.penalty.workloads import WORKLOADS

    option = typing.get_args(WorkloadOpt)[1]
    assert all(name in option.help for name in WORKLOADS)


@pytest.mark.parametrize("name", ["quiet", "no_color"])
def test_every_command_spells_quiet_and_no_color_alike(name: str) -> None:
    """Issue 30 item 8: --quiet (-q) and --no-color, declared once (cli.app.with_output_mode), on every command."""
    spelled = {c: spelling(c, name) for c in COMMANDS}
    assert len(spelled) >= 16 and len(set(spelled.values())) == 1, spelled
    assert spelled["demo"][0] == (("--quiet", "-q") if name == "quiet" else ("--no-color",))
