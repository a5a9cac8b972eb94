"""A rule's message and its effect agree (issue 17, item 14): the loader refuses a rule, built-in or the user's, whose
message makes the claim its effect contradicts ("falls back to TCP" on an unreachable rule, "cannot reach each
other" on a TCP-fallback one), with one line naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import one_clean_line, run

from fabriccheck import examples, rule_wording, rulebook
from fabriccheck.errors import FabricCheckError

RULES = rulebook.builtin_rules_dir()
DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"
# What AWS113 said before: the effect is unreachable ("cannot run"), the message a TCP fallback.
AWS113_BEFORE = "types is not supported, so those pairs fall back to TCP."


def _user_rule(folder: Path, source: str, old: str, new: str, rule_id: str) -> Path:
    """A user's rule made from a shipped one, its id changed and one phrase of its message replaced."""
    text = (RULES / source).read_text()
    assert old in text, old
    shipped_id = Path(source).name.split("-")[0]
    text = text.replace(old, new).replace(f"id: {shipped_id}\n", f"id: {rule_id}\n", 1)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{rule_id}.yaml"
    path.write_text(text)
    return path


def test_every_shipped_rule_of_every_cloud_agrees_with_its_effect() -> None:
    rules = examples.load_rules()
    assert {r.provider for r in rules} == {"aws", "azure", "gcp", "k8s", "slurm"}
    for rule in rules:
        messages = [rule.message, *(v.message for v in rule.by_origin.values() if v.message)]
        assert all(rule_wording.disagreement(rule.effect, m) is None for m in messages), rule.id


def test_aws113_as_it_was_is_refused_naming_the_file_and_field(tmp_path: Path) -> None:
    now = "types is not supported, so those pairs cannot reach each other over EFA and a job across them fails to"
    text = (RULES / "aws/AWS113-efa-family-mix.yaml").read_text()
    said = text[text.index(now) : text.index("hangs at start.") + len("hangs at start.")]
    path = _user_rule(tmp_path, "aws/AWS113-efa-family-mix.yaml", said, AWS113_BEFORE, "ACME113")
    with pytest.raises(FabricCheckError) as caught:
        rulebook._load_file(path)
    assert str(caught.value).startswith(f"{path}: field message: ")
    assert '"fall back"' in str(caught.value) and "effect unreachable" in str(caught.value)


def test_a_template_message_is_checked_too(tmp_path: Path) -> None:
    """AWS101's launch-template wording lives under by_origin; a fallback rule may not say peers cannot connect."""
    path = _user_rule(
        tmp_path,
        "aws/AWS101-efa-missing.yaml",
        "multi-node training cluster will train over TCP.",
        "multi-node training cluster will train over TCP, or its nodes never reach each other.",
        "ACME101",
    )
    with pytest.raises(FabricCheckError, match=r"field by_origin\.template\.message: says \"never reach\""):
        rulebook._load_file(path)


@pytest.mark.parametrize(
    ("effect", "message", "refused"),
    [
        ("unreachable", "so nodes in different zones fall back to TCP over the host NIC.", "fall back"),
        ("unreachable", "so they exchange collective traffic over TCP, if at all.", "over TCP"),
        ("unreachable", "so they cannot reach each other over EFA and the job hangs.", None),
        ("tcp-fallback", "so NCCL falls back to TCP sockets over the ENA interface.", None),
        (
            "tcp-fallback",
            "so every rank fails to connect and the job runs without TCPXO or not at all.",
            "fails to connect",
        ),
        ("tcp-fallback", "so GPUDirect-TCPX cannot run and the nodes use ordinary TCP.", "cannot run"),
        ("weaker-fabric", "this type has no EFA, so all collective traffic is TCP over ENA.", None),
        ("weaker-fabric", "this type has no EFA, so the nodes cannot reach each other.", "cannot reach"),
        ("partial-fabric", "only those network cards carry fabric traffic, a fraction of the bandwidth.", None),
        ("partial-fabric", "the missing cards' traffic falls back to the ENA interface.", "falls back"),
        ("loose-placement", "EC2 may place them far apart: more network hops, and TCP flows capped at 5 Gbps.", None),
        ("none", "whether these nodes reach each other over EFA depends on that limit.", None),
        ("none", "VMs in different partitions are unreachable over InfiniBand.", "unreachable"),
    ],
)
def test_each_effect_refuses_the_claim_it_contradicts(effect: str, message: str, refused: str | None) -> None:
    found = rule_wording.disagreement(effect, message)
    if refused is None:
        assert found is None
    else:
        assert found is not None and f'says "{refused}"' in found and f"effect {effect}" in found


def test_a_user_rule_that_disagrees_is_one_line_exit_2(tmp_path: Path) -> None:
    path = _user_rule(
        tmp_path / "rules",
        "aws/AWS110-efa-security-group.yaml",
        "EFA peers cannot reach each other",
        "EFA peers fall back to TCP sockets",
        "ACME110",
    )
    line = one_clean_line(run("aws", "--from-dump", str(DEMO), "--rules-dir", str(path.parent)))
    assert line.startswith(f'fabriccheck: error: {path}: field message: says "fall back"')
    assert "effect unreachable" in line
