"""Where a run's reports go: `--output FILE` (repeatable; `-o -` is stdout), each in the format its name says, all
checked before anything is collected, so that a folder that does not exist fails in a second, not after a scan.

The rule (docs/scheduled-audit.md says it to users):
- `-` is stdout, written in --format (text unless given); no --output at all is one `-o -`.
- A file whose name ends in a known suffix (SUFFIXES) is written in that format.
- A name without a suffix (`report`, `/dev/stdout`, `/dev/fd/3`) is written in --format, as stdout is.
- A name with a suffix this table does not know (`report.jsn`, `audit.log`) needs --format: without it the run
  stops, since a typo would otherwise be written silently as text.
- A --format given on the command line must be the format of at least one output: `--format sarif -o report.json`
  is an error, not a SARIF file named .json or a JSON file that ignored the flag.
- Two outputs on one file, or `-` twice, are errors. Every format is rendered once, whatever the number of files.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from fabriccheck.errors import FabricCheckError

STDOUT = "-"

# Longest first: `results.sarif.json` is SARIF (GitHub's own examples name it so), not JSON.
SUFFIXES: tuple[tuple[str, str], ...] = (
    (".sarif.json", "sarif"),
    (".json", "json"),
    (".sarif", "sarif"),
    (".xml", "junit"),
    (".md", "markdown"),
    (".prom", "prometheus"),
    (".html", "html"),
    (".txt", "text"),
)


@dataclass(frozen=True)
class Target:
    """One place a report goes: `path` None is stdout. `named` says what chose its format (for error lines)."""

    path: Path | None
    fmt: str
    named: str

    @property
    def to_stdout(self) -> bool:
        return self.path is None


def format_of_name(path: Path) -> str | None:
    """The format a file's suffix names (case does not matter), else None."""
    name = path.name.lower()
    return next((fmt for suffix, fmt in SUFFIXES if name.endswith(suffix) and name != suffix), None)


def resolve(
    outputs: Sequence[Path] | None,
    fmt: str,
    fmt_given: bool,
    formats: Collection[str],
    written_as: str = "reports are written as",
) -> list[Target]:
    """The targets of `--output` (none: stdout), each with its format, by the rule above; `formats` the ones this
    command writes (`written_as` says so in the error line: "--output a.html: reports are written as text, ...").
    Each file's folder is checked now (check_writable)."""
    chosen = list(outputs or [Path(STDOUT)])
    targets: list[Target] = []
    for path in chosen:
        if str(path) == STDOUT:
            if any(t.to_stdout for t in targets):
                raise FabricCheckError("-o - is given twice: stdout takes one report")
            targets.append(Target(None, fmt, f"--format {fmt}"))
            continue
        by_name = format_of_name(path)
        if by_name is not None:
            targets.append(Target(path, by_name, f"--output {path}"))
        elif path.suffix and not fmt_given:
            known = ", ".join(suffix for suffix, _ in SUFFIXES[1:])
            raise FabricCheckError(
                f"--output {path}: no format is known for the suffix {path.suffix} (name it {known}, or give --format)"
            )
        else:
            targets.append(Target(path, fmt, f"--format {fmt}"))
    for target in targets:
        if target.fmt not in formats:
            named = target.named if target.to_stdout else f"{target.named} ({target.fmt} by its suffix)"
            raise FabricCheckError(f"{named}: {written_as} {_listed(formats)}")
    if fmt_given and not any(t.fmt == fmt for t in targets):
        named = ", ".join(f"{t.path} is {t.fmt}" for t in targets)
        raise FabricCheckError(
            f"--format {fmt} is the format of no output ({named} by its suffix): drop --format, or add an output "
            f"in {fmt}"
        )
    from fabriccheck.outputs import same_file

    files = [t.path for t in targets if t.path is not None]
    for index, path in enumerate(files):
        if any(same_file(path, other) for other in files[index + 1 :]):
            raise FabricCheckError(f"--output {path} is given twice: each output is its own file")
        check_writable(path, "--output")
    return targets


def _listed(formats: Collection[str]) -> str:
    names = list(formats)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def check_writable(path: Path, option: str) -> None:
    """`path` can be written (created in its folder, or replaced), checked before the run does anything long: one
    line naming `option` and `path` otherwise. A device or pipe (/dev/stdout) is written directly: it needs only
    to be writable. The real write still fails cleanly (outputs.stage) on what only it can find out: a full
    disk, a folder made read-only meanwhile."""
    try:
        mode: int | None = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:  # a file where a folder should be: Not a directory
        raise FabricCheckError(f"{option} {path}: cannot write ({exc.strerror or exc})") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise FabricCheckError(f"{option} {path}: cannot write (Is a directory)")
    if mode is not None and not stat.S_ISREG(mode):
        if not os.access(path, os.W_OK):
            raise FabricCheckError(f"{option} {path}: cannot write (Permission denied)")
        return
    folder = Path(os.path.realpath(path)).parent
    try:
        folder_mode = folder.stat().st_mode
    except OSError as exc:
        raise FabricCheckError(f"{option} {path}: cannot write ({exc.strerror or exc})") from None
    if not stat.S_ISDIR(folder_mode):
        raise FabricCheckError(f"{option} {path}: cannot write (Not a directory)")
    # The temporary file is created beside the target (outputs.stage): the folder must take a new file.
    if not os.access(folder, os.W_OK | os.X_OK):
        raise FabricCheckError(f"{option} {path}: cannot write (Permission denied)")
