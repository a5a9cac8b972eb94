"""Running the installed `fabriccheck` command as a user does, for the CLI tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # The installed console script, started from a folder outside the source tree unless told otherwise.
    return subprocess.run(
        ["fabriccheck", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd or Path("/"),
        env=env or os.environ.copy(),
    )


def one_clean_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed command printed: exit 2, no traceback, exactly one line on stderr."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]
