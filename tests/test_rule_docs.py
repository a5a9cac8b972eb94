"""The rule reference of the documentation site (docs/rules/) is generated from the rule files by
tools/build_rule_docs.py: these tests keep the pages in step with rules/ and check what a page says of a rule."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import get_args

import pytest

from fabriccheck.builders import rule_pages as docs
from fabriccheck.findings import Effect
from fabriccheck.rulebook import load_book

ROOT = Path(__file__).resolve().parent.parent
AWS121 = ROOT / "rules" / "aws" / "AWS121-spread-placement-group.yaml"


def test_generated_rule_pages_match_the_rule_files() -> None:
    wrong = docs.stale(docs.build())
    assert wrong == [], f"docs/rules/{wrong} out of date with rules/: run python tools/build_rule_docs.py"


def test_every_rule_and_every_id_it_reports_under_has_a_section_and_an_index_row() -> None:
    pages = docs.build()
    folders = sorted(p.name for p in (ROOT / "rules").iterdir() if p.is_dir())
    assert {"aws", "azure", "gcp", "evidence"} <= set(folders)
    for folder in folders:
        for path in sorted((ROOT / "rules" / folder).glob("*.yaml")):
            rule_id = path.name.split("-")[0]
            assert f"\n## {rule_id}: " in pages[f"{folder}.md"], rule_id
            assert f"| [{rule_id}]({folder}.md#{rule_id.lower()}) |" in pages["index.md"], rule_id
    # Ids a rule reports under on launch templates are anchors on its section and rows of their own.
    assert '<a id="aws140"></a>' in pages["aws.md"] and "| [AWS140](aws.md#aws140) | warning |" in pages["index.md"]
    assert "**On templates** it reports as **AWS141** (severity warning)" in pages["aws.md"]


def _rule_folder(tmp_path: Path, title: str) -> Path:
    folder = tmp_path / "rules"
    (folder / "aws").mkdir(parents=True)
    text = AWS121.read_text().replace("id: AWS121", "id: X921")
    head, _, rest = text.partition("\ntitle: ")
    text = head + f"\ntitle: {title!r}\n" + rest.partition("\n")[2]
    (folder / "aws" / "X921-spread.yaml").write_text(text)
    return folder


def test_a_rule_section_says_what_why_fix_and_examples(tmp_path: Path) -> None:
    pages = docs.build(_rule_folder(tmp_path, "Spread placement"))
    assert set(pages) == {"aws.md", "index.md"}
    page = pages["aws.md"]
    section = page[page.index("## X921: Spread placement { #x921 }") :]
    (rule,) = load_book([tmp_path / "rules"], providers=()).rules
    assert f"severity **{rule.severity}** · category `{rule.category}` · scope `{rule.scope}`" in section
    assert rule.condition.strip() in section  # what it flags
    assert docs.EFFECTS[rule.effect] in section  # why
    assert docs._flat(rule.remediation.summary) in section  # the fix
    assert rule.remediation.cli and " ".join(rule.remediation.cli.split()) in section
    for ref in rule.references:
        assert f"<{ref}>" in section
    for example in (*rule.examples.passing, *rule.examples.failing):
        assert f": {example.name} (flags " in section
    for example in rule.examples.failing:
        assert "(flags " + ", ".join(f"`{f}`" for f in example.flags) + ')"' in section
    assert section.count('??? example "Passing: ') == len(rule.examples.passing)
    assert "| [X921](aws.md#x921) | " in pages["index.md"]


def test_text_from_a_rule_file_cannot_break_the_page(tmp_path: Path) -> None:
    pages = docs.build(_rule_folder(tmp_path, "a | b <script>x</script> *c*"))
    row = next(line for line in pages["index.md"].splitlines() if line.startswith("| [X921]"))
    assert row.endswith(r"| a \| b &lt;script&gt;x&lt;/script&gt; \*c\* |")
    assert "<script>" not in pages["aws.md"]


def test_check_finds_a_changed_a_missing_and_a_leftover_page(tmp_path: Path) -> None:
    pages = docs.build()
    out = tmp_path / "rules"
    docs.write(pages, out)
    assert docs.stale(pages, out) == []
    (out / "gcp.md").write_text((out / "gcp.md").read_text().replace("GCP101", "GCP1O1"))
    (out / "azure.md").unlink()
    (out / "old.md").write_text(docs.HEADER + "# a provider folder since removed\n")
    (out / "notes.md").write_text("# written by hand, not generated\n")
    assert docs.stale(pages, out) == ["azure.md", "gcp.md", "old.md"]
    docs.write(pages, out)
    assert docs.stale(pages, out) == [] and (out / "notes.md").is_file() and not (out / "old.md").exists()


def test_check_mode_exits_1_on_stale_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rules"
    shutil.copytree(ROOT / "docs" / "rules", out)
    monkeypatch.setattr(docs, "OUT", out)
    assert docs.main(["--check"]) == 0
    (out / "evidence.md").write_text("stale\n")
    assert docs.main(["--check"]) == 1
    assert "docs/rules/evidence.md: out of date with rules/" in capsys.readouterr().err


def test_every_effect_has_a_meaning() -> None:
    assert set(docs.EFFECTS) == set(get_args(Effect))
