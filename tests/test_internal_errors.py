"""Any internal error exits 2 with one line (issue 29 item 9; fabriccheck.cli.entry): whatever a command raises,
the run never ends with a traceback or with an exit code a gate would read as a verdict (1: findings). The faults
are raised where the judging starts (flow.run), in the command as a user runs it."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import pytest
from cli_run import one_clean_line, run

from fabriccheck import flow


class _Unsayable(Exception):
    def __str__(self) -> str:
        raise ValueError("no words")


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        (SystemExit(1), "SystemExit: 1"),  # a library's sys.exit(1): was exit 1, read as findings
        (SystemExit("gave up"), "SystemExit: gave up"),  # was a bare line and exit 1
        (_Unsayable(), "_Unsayable: (its message could not be shown)"),  # was a traceback from the handler itself
        (RecursionError("maximum recursion depth exceeded"), "RecursionError: maximum recursion depth exceeded"),
    ],
    ids=["sys.exit(1)", "sys.exit(text)", "unsayable", "recursion"],
)
def test_an_internal_error_is_one_line_and_exit_2_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: BaseException, says: str
) -> None:
    def failing(*args: object, **kwargs: object) -> NoReturn:
        raise fault

    monkeypatch.setattr(flow, "run", failing)
    (tmp_path / "report.json").write_text("last week's report\n")
    line = one_clean_line(
        run("demo", "-o", str(tmp_path / "report.json"), "--save-inventory", str(tmp_path / "i.json"))
    )
    assert line == f"fabriccheck: internal error: {says} (set FABRICCHECK_DEBUG=1 for details)"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]  # no inventory, no temporary file
    assert (tmp_path / "report.json").read_text() == "last week's report\n"
