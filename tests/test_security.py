"""Trust: every collector only reads, its printed least privilege names exactly the operations a full fleet scan
issues, and no credential it was given (or handed by STS) reaches any output.

The read-only proofs record every operation the real SDK clients send during a full scan on 127.0.0.1 (an
AWS organization with --org-role, --all-regions and --topology; an Azure management group; a GCP organization
with nested folders). The secret scans plant fake credentials in every source each cloud's chain reads and
run the installed command, successful and failing, in every report format with --verbose and a saved
inventory, then look for the planted values (and any private key, JWT or bearer token) in everything it wrote.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from arm_replay import ArmReplay, make_certificate
from arm_replay import serve as serve_arm
from aws_fleet_replay import FleetReplay
from aws_fleet_replay import serve as serve_aws
from cli_run import run
from gce_replay import ComputeReplay, fake_service_account_key, rm_folder, rm_project, use_fake_google_key
from gce_replay import serve as serve_gce

from fabriccheck.builders import demo_azure
from fabriccheck.builders.demo_gcp import Project, build
from fabriccheck.providers.aws import collect as aws_collect
from fabriccheck.providers.aws import fleet
from fabriccheck.providers.azure import collect as azure_collect
from fabriccheck.providers.gcp import collect as gcp_collect

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"
ACCOUNTS = ["111111111111", "222222222222"]
FORMATS = ["text", "json", "sarif", "junit", "markdown"]
READS = re.compile(r"^(Describe|List|Get)[A-Z]")


def aws_organization(regions: tuple[str, ...] = ("us-east-1",)) -> FleetReplay:
    answers = {p.name: json.loads(p.read_text()) for p in DEMO.glob("describe-*.json")}
    return FleetReplay({a: {r: answers for r in regions} for a in ACCOUNTS})


# ------------------------------------------------------------------------------------------- read-only


def test_aws_fleet_scan_only_reads_and_the_policy_names_exactly_what_it_issued(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = aws_organization(("us-east-1", "eu-west-1"))
    issued: set[str] = set()
    session = boto3.session.Session()
    session.events.register(
        "before-call", lambda model, **_: issued.add(f"{model.service_model.endpoint_prefix}:{model.name}")
    )
    plan = fleet.Fleet(org_role="Auditor", external_id="ext")
    with serve_aws(replay) as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        inventory = aws_collect.collect_live([], session=session, accounts=plan, every_region=True, topology=True)
    assert inventory.complete, inventory.errors
    operations = {op.split(":")[1] for op in issued}
    assert all(READS.match(op) or op == "AssumeRole" for op in operations), operations
    policy = aws_collect.iam_policy(plan)
    allowed = {action for statement in policy["Statement"] for action in statement["Action"]}
    assert issued == allowed
    # The server saw the same, and nothing else.
    assert {f"{r.service}:{r.action}" for r in replay.requests} == allowed
    # sts:AssumeRole is allowed on the org role only; the read statement on every resource.
    assume = next(s for s in policy["Statement"] if s["Action"] == ["sts:AssumeRole"])
    assert assume["Resource"] == "arn:aws:iam::*:role/Auditor"


def test_azure_management_group_scan_only_gets_and_the_role_names_exactly_what_it_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = make_certificate(tmp_path)
    _azure_env(tmp_path, cert, monkeypatch, "fake-token")
    subs = ["11111111-0000-0000-0000-000000000000", "22222222-0000-0000-0000-000000000000"]
    replay = ArmReplay({s: demo_azure.demo(s).files for s in subs}, page_size=3)
    replay.management_groups = {
        "root": [("subscription", subs[0]), ("group", "gpu")],
        "gpu": [("subscription", subs[1])],
    }
    with serve_arm(replay, cert, key) as url:
        inventory = azure_collect.collect_live([], endpoint_url=url, management_group="root")
    assert inventory.complete, inventory.errors
    assert {method for method, _ in replay.calls} == {"GET"}
    used = {_arm_permission(path) for _, path in replay.calls}
    assert used == {a.lower() for a in azure_collect.role_for("root")["Actions"]}


def _arm_permission(path: str) -> str:
    """The read action an ARM GET path needs: its provider namespace and resource types, then /read (a query such
    as statusOnly=true needs nothing more)."""
    path = path.lower().split("?", 1)[0]
    if path.endswith("/descendants"):
        return azure_collect.DESCENDANTS_READ.lower()
    tail = path.split("/providers/", 1)[1].split("/")
    namespace, rest = tail[0], tail[1:]
    types = rest[0::2]  # type, name, type, name ...
    return f"{namespace}/{'/'.join(types)}/read"


def test_gcp_organization_scan_only_gets_and_the_role_names_exactly_what_it_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _gcp_env(tmp_path, monkeypatch)
    replay = _gcp_estate()
    with serve_gce(replay) as url:
        inventory = gcp_collect.collect_live([], endpoint_url=url, organization="42")
        gcp_collect.collect_live([], endpoint_url=url, folder="7", zones=["us-central1-a"])
    assert inventory.complete, inventory.errors
    assert {r.method for r in replay.requests} == {"GET"}
    used = {
        f"resourcemanager.{r.path.rsplit('/', 1)[1]}.list"
        if r.path.startswith("/v3/")
        # regionNetworkFirewallPolicies.getEffectiveFirewalls (Compute Engine IAM permissions)
        else "compute.networks.getRegionEffectiveFirewalls"
        if r.path.endswith("/getEffectiveFirewalls")
        else f"compute.{r.path.rsplit('/', 1)[1]}.list"  # the path's collection names the permission
        for r in replay.requests
    }
    assert used == set(gcp_collect.custom_role(listing=True)["includedPermissions"])


# ------------------------------------------------------------------------------------------- secrets

AWS_ENV_KEY = "AKIAPLANTEDENV000001"
AWS_FILE_KEY = "AKIAPLANTEDFILE00001"
PLANTED = {
    "aws env secret": "planted-env-secret-Xk29Q",
    "aws env session token": "planted-env-session-token-Zq81",
    "aws env key id": AWS_ENV_KEY,
    "aws file secret": "planted-file-secret-Mv55R",
    "aws file session token": "planted-file-session-token-Lp02",
    "aws file key id": AWS_FILE_KEY,
    "sts secret": "assumed-secret-",
    "sts token": "assumed-token-",
    "sts key id": "ASIA1111",
    "azure client secret": "planted-azure-client-secret-Hh37",
    "azure certificate password": "planted-azure-cert-password-Tt90",
    "azure bearer token": "planted-azure-bearer-token-Ww12",
    "gcp private key id": "plantedprivatekeyid0123456789abcdef0123",
    "url password": "planted-url-password-Rr44",
    "url signature": "planted-url-signature-Yy66",
}
# Whatever the value, none of these shapes belongs in an output.
SHAPES = {
    "private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    "JWT": re.compile(r"\beyJ[\w-]{8,}\.[\w-]{8,}\."),
    "bearer": re.compile(r"(?i)\bbearer\s+[\w.~+/-]{6,}"),
}


@pytest.fixture
def planted(tmp_path: Path) -> Iterator[dict[str, str]]:
    """An environment with a fake credential in every source each cloud's chain reads."""
    aws_dir = tmp_path / "aws"
    aws_dir.mkdir()
    (aws_dir / "credentials").write_text(
        f"[planted]\naws_access_key_id = {AWS_FILE_KEY}\naws_secret_access_key = {PLANTED['aws file secret']}\n"
        f"aws_session_token = {PLANTED['aws file session token']}\n"
    )
    (aws_dir / "config").write_text("[profile planted]\nregion = us-east-1\n")
    key = fake_service_account_key()
    key["private_key_id"] = PLANTED["gcp private key id"]
    (tmp_path / "gcp-key.json").write_text(json.dumps(key))
    az_bin = tmp_path / "bin"
    az_bin.mkdir()
    _fake_az(az_bin, PLANTED["azure bearer token"])
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": AWS_ENV_KEY,
        "AWS_SECRET_ACCESS_KEY": PLANTED["aws env secret"],
        "AWS_SESSION_TOKEN": PLANTED["aws env session token"],
        "AWS_SHARED_CREDENTIALS_FILE": str(aws_dir / "credentials"),
        "AWS_CONFIG_FILE": str(aws_dir / "config"),
        "AZURE_CLIENT_ID": "00000000-1111-2222-3333-444444444444",
        "AZURE_TENANT_ID": "00000000-5555-6666-7777-888888888888",
        "AZURE_CLIENT_SECRET": PLANTED["azure client secret"],
        "AZURE_CLIENT_CERTIFICATE_PASSWORD": PLANTED["azure certificate password"],
        "AZURE_TOKEN_CREDENTIALS": "AzureCliCredential",
        "PATH": f"{az_bin}{os.pathsep}{os.environ['PATH']}",
        "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "gcp-key.json"),
        "CLOUDSDK_CONFIG": str(tmp_path / "gcloud"),
        "NO_GCE_CHECK": "true",  # google-auth compares it with "true" exactly (conftest.SAFE_ENV)
        "GCE_METADATA_HOST": "127.0.0.1:9",
        "GCE_METADATA_IP": "127.0.0.1:9",
    }
    env.pop("GOOGLE_CLOUD_PROJECT", None)
    env["PLANTED_TEST_PEM"] = key["private_key"]
    yield env


def _fake_az(folder: Path, token: str) -> None:
    answer = {
        "accessToken": token,
        "expiresOn": "2099-01-01 00:00:00.000000",
        "expires_on": 4070908800,
        "subscription": "11111111-0000-0000-0000-000000000000",
        "tenant": "00000000-5555-6666-7777-888888888888",
        "tokenType": "Bearer",
    }
    script = folder / "az"
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{json.dumps(answer)}\nEOF\n")
    script.chmod(0o755)


def _azure_env(tmp_path: Path, cert: Path, monkeypatch: pytest.MonkeyPatch, token: str) -> None:
    folder = tmp_path / "az-bin"
    folder.mkdir(exist_ok=True)
    _fake_az(folder, token)
    monkeypatch.setenv("AZURE_TOKEN_CREDENTIALS", "AzureCliCredential")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))


def _gcp_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_google_key(tmp_path, monkeypatch)
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)


def _gcp_estate(denied: str | None = None) -> ComputeReplay:
    projects = {}
    for name in ("alpha", "beta"):
        project = Project(name)
        build(project)
        projects[name] = project.files()
    replay = ComputeReplay.from_files(projects)
    replay.rm_projects = {
        "organizations/42": [rm_project("alpha", "organizations/42")],
        "folders/7": [rm_project("beta", "folders/7")],
    }
    replay.rm_folders = {"organizations/42": [rm_folder("7", "organizations/42")]}
    if denied:
        replay.failures[(denied, "*")] = 403
    return replay


def _run(args: list[str], env: dict[str, str], out: Path) -> list[tuple[str, str]]:
    """Run the installed command; every output it made, as (what, text)."""
    result = run(*args, env=env, cwd=out)
    assert "Traceback" not in result.stderr, result.stderr
    outputs = [(f"{args[0]} stdout", result.stdout), (f"{args[0]} stderr", result.stderr)]
    outputs += [(f"{args[0]} {p.name}", p.read_text()) for p in sorted(out.iterdir()) if p.is_file()]
    for p in list(out.iterdir()):
        p.unlink()
    return outputs


def _leaks(outputs: list[tuple[str, str]], env: dict[str, str]) -> list[str]:
    pem_body = env["PLANTED_TEST_PEM"].splitlines()[3]  # a line from the middle of the private key
    found = []
    for what, text in outputs:
        for name, value in {**PLANTED, "gcp private key body": pem_body}.items():
            if value in text:
                found.append(f"{name} in {what}")
        for name, shape in SHAPES.items():
            if shape.search(text):
                found.append(f"a {name} in {what}")
    return found


def _runs(args: list[str], env: dict[str, str], out: Path) -> list[tuple[str, str]]:
    """A live run logging every scope (--verbose) as text; one writing JSON and saving its inventory; then that
    inventory judged in every report format (the flow and renderers the live run uses, in this process)."""
    from contextlib import redirect_stderr, redirect_stdout
    from io import StringIO

    from fabriccheck import cli

    outputs = _run([*args, "-f", "text", "--verbose"], env, out)
    saved = out.parent / "saved.json"
    outputs += _run([*args, "-f", "json", "-o", "report.json", "--verbose", "--save-inventory", str(saved)], env, out)
    assert saved.exists(), outputs[-2:]  # the run got as far as saving (stderr says why not)
    outputs.append(("saved inventory", saved.read_text()))
    for fmt in FORMATS:
        stdout, stderr = StringIO(), StringIO()
        with redirect_stdout(stdout), redirect_stderr(stderr):
            cli.main(["check", str(saved), "-f", fmt, "--verbose"])
        outputs += [(f"check -f {fmt}", stdout.getvalue()), (f"check -f {fmt} stderr", stderr.getvalue())]
    saved.unlink()
    return outputs


def test_no_aws_secret_reaches_any_output(planted: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    outputs: list[tuple[str, str]] = []
    replay = aws_organization(("us-east-1", "eu-west-1"))
    with serve_aws(replay) as url:
        env = {**planted, "AWS_ENDPOINT_URL": url}
        fleet_args = ["aws", "--org-role", "Auditor", "--external-id", "ext-1234", "-r", "us-east-1", "-r", "eu-west-1"]
        outputs += _runs(fleet_args, env, out)
        outputs += _run([*fleet_args, "--profile", "planted", "-f", "json", "--verbose"], env, out)
        # Failing: one role cannot be assumed, one region answers 5xx.
        replay.deny_assume = {ACCOUNTS[0]}
        replay.fail = {(ACCOUNTS[1], "eu-west-1"): 500}
        outputs += _runs(fleet_args, env, out)
        replay.expired = True  # the caller's own credentials: one line
        outputs += _run([*fleet_args, "-f", "json"], env, out)
    signed = f"http://user:{PLANTED['url password']}@127.0.0.1:9/?X-Amz-Signature={PLANTED['url signature']}"
    outputs += _run(["aws", "-r", "us-east-1", "--endpoint-url", signed, "-f", "json", "--verbose"], planted, out)
    assert any("AssumeRole" in text for _, text in outputs)  # the failing runs did fail as planned
    assert any("AWS credentials have expired" in text for _, text in outputs)
    assert _leaks(outputs, planted) == []


def test_no_azure_secret_reaches_any_output(planted: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    cert, key = make_certificate(tmp_path)
    env = {**planted, "REQUESTS_CA_BUNDLE": str(cert)}
    subs = ["11111111-0000-0000-0000-000000000000", "22222222-0000-0000-0000-000000000000"]
    replay = ArmReplay({s: demo_azure.demo(s).files for s in subs}, page_size=5)
    replay.management_groups = {"root": [("subscription", s) for s in subs]}
    outputs: list[tuple[str, str]] = []
    with serve_arm(replay, cert, key) as url:
        args = ["azure", "--endpoint-url", url, "--management-group", "root"]
        outputs += _runs(args, env, out)
        replay.deny = {subs[0]}
        outputs += _runs(args, env, out)
        signed = f"{url}/?sig={PLANTED['url signature']}"
        outputs += _run(["azure", "--endpoint-url", signed, "-s", subs[1], "-f", "json"], env, out)
    assert any("AuthorizationFailed" in text for _, text in outputs)
    assert _leaks(outputs, planted) == []


def test_no_gcp_secret_reaches_any_output(planted: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    outputs: list[tuple[str, str]] = []
    for denied in (None, "beta"):
        with serve_gce(_gcp_estate(denied)) as url:
            outputs += _runs(["gcp", "--endpoint-url", url, "--organization", "42"], planted, out)
    signed = f"http://user:{PLANTED['url password']}@127.0.0.1:9/?X-Goog-Signature={PLANTED['url signature']}"
    outputs += _run(["gcp", "-p", "alpha", "--endpoint-url", signed, "-f", "json"], planted, out)
    assert any("compute.instances.list" in text for _, text in outputs)
    assert _leaks(outputs, planted) == []


def test_the_leak_scan_finds_what_it_looks_for(planted: dict[str, str]) -> None:
    """The scan itself can fail: each planted value and shape is found when present."""
    pem = planted["PLANTED_TEST_PEM"]
    texts = [(name, f"x {value} y") for name, value in PLANTED.items()] + [
        ("pem", pem),
        ("auth", "Authorization: Bearer abcdef123"),
    ]
    assert len(_leaks(texts, planted)) >= len(PLANTED) + 2


def test_redaction_masks_credentials_in_sdk_error_text() -> None:
    from fabriccheck.redaction import redact

    text = redact(
        'Could not connect to "http://bob:hunter2@127.0.0.1:9/?X-Amz-Signature=s1g&X-Amz-Credential=AKIAABCDEFGHIJKL" '
        "Authorization: Bearer abc.def.ghi key AKIAPLANTEDENV000001 sas ?sv=1&sig=zzz&se=2"
    )
    for secret in ("hunter2", "s1g", "AKIAABCDEFGHIJKL", "abc.def.ghi", "AKIAPLANTEDENV000001", "zzz"):
        assert secret not in text
    assert "127.0.0.1:9" in text and "sv=1" in text  # what is not secret stays readable
