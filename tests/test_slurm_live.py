"""`fabriccheck slurm` without --from-dump: the read-only commands run on a login node (providers/slurm/live.py).

The `scontrol` and `squeue` put first on PATH here print the files of fixtures/slurm/pcluster, which are Slurm's own
output shapes (fixtures/slurm/SOURCES.md: SchedMD/slurm src/plugins/data_parser/v0.0.43/parsers.c at 284c3b95), so
the reader under test is the real one; the text of `scontrol show topology` is topology_block.c's
`BlockName=%s BlockIndex=%u Nodes=%s BlockSize=%u`, and `scontrol show config` prints `SLURM_CONF = PATH`
(SchedMD/slurm src/api/config_info.c: the pair "SLURM_CONF", default_slurm_config_file). Each fake logs its argv,
so a test can check that nothing but the allowed read-only commands ever ran.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import stat
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run
from loopback import closing_endpoint, serving

from fabriccheck.errors import FabricCheckError
from fabriccheck.providers.slurm import live

ROOT = Path(__file__).resolve().parents[1]
SLURM = ROOT / "fixtures" / "slurm" / "pcluster"
AWS = ROOT / "fixtures" / "demo" / "aws"

_FAKE = """#!/bin/sh
# A stand-in for {tool}: logs its argv, prints what {folder} holds for it.
echo "{tool} $*" >> "{log}"
case "$*" in
{cases}
  *) echo "{tool}: unexpected arguments: $*" >&2; exit 64 ;;
esac
"""


def _tools(tmp_path: Path, etc: Path, fail: dict[str, str] | None = None) -> tuple[dict[str, str], Path]:
    """A PATH whose scontrol and squeue print the fixture files; `fail` maps a command line to its error."""
    bin_dir, log = tmp_path / "bin", tmp_path / "argv.log"
    bin_dir.mkdir()
    topology = tmp_path / "topology.txt"
    topology.write_text(
        "BlockName=block1 BlockIndex=0 Nodes=train-st-p5-[1-4] BlockSize=2\n"
        "BlockName=block2 BlockIndex=1 Nodes=spot-dy-p5-[1-2] BlockSize=2\n"
    )
    outputs = {
        "scontrol": {
            "show nodes --json": f'cat "{SLURM / "nodes.json"}"',
            "show partitions --json": f'cat "{SLURM / "partitions.json"}"',
            "show topology": f'cat "{topology}"',
            "show config": f'echo "Configuration data as of 2026-12-04T22:00:00"; echo "SLURM_CONF              = '
            f'{etc / "slurm.conf"}"; echo "SLURM_VERSION           = 25.05.3"',
        },
        "squeue": {"--json": f'cat "{SLURM / "jobs.json"}"'},
        # The fallback of a Slurm without `scontrol ... --json` (before 23.02): run only when that fails.
        "sinfo": {"--json": 'echo "sinfo: not expected to run while scontrol answers" >&2; exit 1'},
    }
    for tool, answers in outputs.items():
        cases = []
        for args, command in answers.items():
            if fail and f"{tool} {args}" in fail:
                command = f'echo "{fail[f"{tool} {args}"]}" >&2; exit 1'
            cases.append(f'  "{args}") {command} ;;')
        script = bin_dir / tool
        script.write_text(_FAKE.format(tool=tool, folder=SLURM, log=log, cases="\n".join(cases)))
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return env, log


def _etc(tmp_path: Path) -> Path:
    etc = tmp_path / "etc-slurm"
    etc.mkdir()
    for name in ("slurm.conf", "topology.conf", "gres.conf"):
        shutil.copy(SLURM / name, etc / name)
    return etc


def _report(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    result = run("slurm", *args, "-f", "json", env=env)
    assert result.returncode in (0, 1, 2) and result.stdout, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, report


def _findings(report: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(f["rule"], f["cluster"], r) for f in report["findings"] for r in f["resources"]}


def test_live_run_judges_what_the_dump_of_the_same_commands_judges(tmp_path: Path) -> None:
    """The same cluster read live (the commands run here) and from its dump gives the same findings, complete."""
    env, _ = _tools(tmp_path, _etc(tmp_path))
    code, report = _report(env, "--cloud-dump", str(AWS))
    dump = tmp_path / "dump"
    shutil.copytree(SLURM, dump)
    (dump / "topology.txt").write_text((tmp_path / "topology.txt").read_text())
    dump_code, from_dump = _report(dict(os.environ), "--from-dump", str(dump), "--cloud-dump", str(AWS))
    assert _findings(report) == _findings(from_dump)
    # The cluster's name is slurm.conf's ClusterName, read from where `scontrol show config` says.
    assert ("SLURM121", "slurm:llm:slurm:slurm-partition/train", "train-st-p5-1") in _findings(report)
    assert (code, report["complete"]) == (dump_code, True)
    assert report["source"].startswith("slurm live + aws dump")
    assert "fabriccheck-slurm-" not in json.dumps(report)  # the private folder is nowhere in the report


def test_only_the_allowed_read_only_commands_ever_run(tmp_path: Path) -> None:
    """Every argv the live run starts is one of live.ALLOWED, each once; none of them writes (no `update`)."""
    env, log = _tools(tmp_path, _etc(tmp_path))
    _report(env)
    ran = log.read_text().splitlines()
    fallbacks = {" ".join(argv) for _, argv in live.FALLBACKS.values()}
    assert sorted(ran) == sorted({" ".join(argv) for argv in live.ALLOWED} - fallbacks)  # none failed: no fallback
    assert not any(word in line.split() for line in ran for word in ("update", "create", "delete", "reconfigure"))


def test_run_refuses_any_argv_outside_the_allow_list() -> None:
    """live.run never starts a command that is not one of the documented read-only ones."""
    with pytest.raises(FabricCheckError, match="refused to run `scontrol update"):
        live.run(("scontrol", "update", "NodeName=x", "State=DRAIN"))


def test_a_failing_nodes_command_is_one_line_naming_it(tmp_path: Path) -> None:
    """nodes.json is required: `scontrol show nodes --json` failing stops the run with one line, exit 2."""
    fail = {"scontrol show nodes --json": "slurm_load_node error: Unable to contact"}
    env, log = _tools(tmp_path, _etc(tmp_path), fail=fail)
    line = one_clean_line(run("slurm", env=env))
    assert "`scontrol show nodes --json` failed (exit 1): slurm_load_node error: Unable to contact" in line
    # Its fallback (sinfo --json, for a Slurm before 23.02) was tried, and its failure is named too.
    assert "; `sinfo --json` failed (exit 1): sinfo: not expected to run" in line
    assert "sinfo --json" in log.read_text().splitlines()


def test_missing_scontrol_is_one_line(tmp_path: Path) -> None:
    """Off a login node (no scontrol on PATH): one line saying so, exit 2."""
    empty = tmp_path / "bin"
    empty.mkdir()
    line = one_clean_line(run("slurm", env=dict(os.environ, PATH=str(empty))))
    assert "scontrol is not on PATH: run on a login node, or give --from-dump DIR" in line


def test_a_failing_optional_command_leaves_the_run_incomplete(tmp_path: Path) -> None:
    """squeue failing: the job rules judge nothing, so the run is incomplete and exits 2 (it never passes)."""
    env, _ = _tools(tmp_path, _etc(tmp_path), fail={"squeue --json": "squeue: error: Invalid user"})
    code, report = _report(env, "--cloud-dump", str(AWS))
    assert (code, report["complete"]) == (2, False)
    assert any(
        e["call"] == "squeue --json" and "Invalid user" in e["message"] for e in report["errors"]
    ), report["errors"]


def test_missing_slurm_conf_leaves_the_run_incomplete(tmp_path: Path) -> None:
    """`scontrol show config` names a slurm.conf that is not there: a collection error, not a pass."""
    env, _ = _tools(tmp_path, tmp_path / "nowhere")
    code, report = _report(env, "--cloud-dump", str(AWS))
    assert (code, report["complete"]) == (2, False)
    assert any("slurm.conf" in e["message"] for e in report["errors"])


def test_damaged_output_names_the_command_not_a_private_folder(tmp_path: Path) -> None:
    """A damaged answer is one line naming the command that gave it."""
    env, _ = _tools(tmp_path, _etc(tmp_path))
    bad = tmp_path / "bin" / "squeue"
    bad.write_text('#!/bin/sh\necho \'{"jobs": [{"partition": "train"}]}\'\n')
    line = one_clean_line(run("slurm", env=env))
    assert line.endswith("`squeue --json`: jobs[0] has no job_id"), line


# ---- slurmrestd --------------------------------------------------------------------------------------------------
# The daemon answers GET /slurm/v0.0.4x/{nodes,partitions,jobs} with the data_parser JSON scontrol and squeue print
# (SchedMD/slurm doc/html/rest_api.shtml); it authenticates with the X-SLURM-USER-TOKEN and X-SLURM-USER-NAME headers
# (doc/html/rest_quickstart.shtml, doc/html/rest.shtml), the user being the JWT's `sun` claim (doc/html/jwt.shtml).


def _jwt(claims: dict[str, Any]) -> str:
    """A token shaped as `scontrol token` prints it: HS256 header, claims iat/exp/sun (jwt.shtml, Compatibility)."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJlLW5vdC1jaGVja2Vk"


TOKEN = _jwt({"exp": 1893456000, "iat": 1764800000, "sun": "alice"})


def _daemon(seen: list[dict[str, str]], status: dict[str, int] | None = None) -> type[BaseHTTPRequestHandler]:
    """slurmrestd serving API v0.0.42 only (v0.0.43 is a 404, as for an older daemon); `status` fails endpoints."""
    files = {"nodes": "nodes.json", "partitions": "partitions.json", "jobs": "jobs.json"}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
            endpoint = self.path.removeprefix("/slurm/v0.0.42/")
            code = (status or {}).get(endpoint, 200)
            if self.headers.get("X-SLURM-USER-TOKEN") != TOKEN:
                code = 401
            body = (SLURM / files[endpoint]).read_bytes() if endpoint in files and code == 200 else b"{}"
            self.send_response(code if endpoint in files else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    return Handler


def test_slurmrestd_judges_what_the_same_answers_judge_from_a_dump(tmp_path: Path) -> None:
    """Nodes, partitions and jobs from slurmrestd (API version found by the 404s) judge as the same files do; the
    token and the user of its `sun` claim go in the two headers."""
    seen: list[dict[str, str]] = []
    env = dict(os.environ, SLURM_JWT=TOKEN)
    with serving(_daemon(seen)) as url:
        code, report = _report(env, "--slurmrestd", url, "--cloud-dump", str(AWS))
    dump = tmp_path / "dump"
    dump.mkdir()
    for name in ("nodes.json", "partitions.json", "jobs.json"):
        shutil.copy(SLURM / name, dump / name)
    dump_code, from_dump = _report(dict(os.environ), "--from-dump", str(dump), "--cloud-dump", str(AWS))
    assert _findings(report) and _findings(report) == _findings(from_dump)
    assert (code, report["complete"]) == (dump_code, from_dump["complete"])
    assert [s["path"] for s in seen] == [
        "/slurm/v0.0.43/nodes", "/slurm/v0.0.42/nodes", "/slurm/v0.0.42/partitions", "/slurm/v0.0.42/jobs"
    ]
    assert {(s["x-slurm-user-token"], s["x-slurm-user-name"]) for s in seen} == {(TOKEN, "alice")}
    assert report["source"].startswith(f"slurmrestd {url} + aws dump")
    assert TOKEN not in json.dumps(report)


def test_slurm_user_overrides_the_tokens_claim() -> None:
    """--slurm-user names the user sent in X-SLURM-USER-NAME."""
    seen: list[dict[str, str]] = []
    with serving(_daemon(seen)) as url:
        _report(dict(os.environ, SLURM_JWT=TOKEN), "--slurmrestd", url, "--slurm-user", "svc-audit")
    assert {s["x-slurm-user-name"] for s in seen} == {"svc-audit"}


def test_refused_token_is_one_line_and_never_printed_even_when_debugging() -> None:
    """A refused token (HTTP 401) is one line naming the request; with FABRICCHECK_DEBUG=1 the token is still
    nowhere in the output."""
    other = _jwt({"exp": 1893456000, "iat": 1764800000, "sun": "mallory"})
    with serving(_daemon([])) as url:
        for debug in ("", "1"):
            result = run("slurm", "--slurmrestd", url, env=dict(os.environ, SLURM_JWT=other, FABRICCHECK_DEBUG=debug))
            assert other not in result.stdout + result.stderr
            assert result.returncode == 2
            assert f"GET {url}/slurm/v0.0.42/nodes: HTTP 401 (the token was refused" in result.stderr


def test_a_failing_jobs_endpoint_leaves_the_run_incomplete() -> None:
    """GET .../jobs failing: the job rules judge nothing, the run is incomplete (exit 2), the token unprinted."""
    with serving(_daemon([], status={"jobs": 503})) as url:
        code, report = _report(dict(os.environ, SLURM_JWT=TOKEN, FABRICCHECK_DEBUG="1"), "--slurmrestd", url)
    assert (code, report["complete"]) == (2, False)
    assert [e["call"] for e in report["errors"]] == [f"GET {url}/slurm/v0.0.42/jobs"]
    assert TOKEN not in json.dumps(report)


def test_slurmrestd_bad_setups_are_one_line_and_send_nothing() -> None:
    """Plain http to another host would carry the token in clear (refused as endpoints.py refuses it for the
    clouds); no token, or one that names no user, is one line before any request."""
    with closing_endpoint() as (url, connected):
        env = dict(os.environ, SLURM_JWT=TOKEN)
        assert "plain http:// would send the Slurm JWT" in one_clean_line(
            run("slurm", "--slurmrestd", "http://10.0.0.5:6820", env=env)
        )
        no_token = {k: v for k, v in os.environ.items() if k != "SLURM_JWT"}
        assert "needs a token in SLURM_JWT" in one_clean_line(run("slurm", "--slurmrestd", url, env=no_token))
        anonymous = dict(os.environ, SLURM_JWT=_jwt({"exp": 1893456000}))
        assert "give --slurm-user NAME" in one_clean_line(run("slurm", "--slurmrestd", url, env=anonymous))
        assert "cannot be used together" in one_clean_line(
            run("slurm", "--slurmrestd", url, "--from-dump", str(SLURM), env=env)
        )
        assert not connected.is_set()
