"""Errors the CLI turns into one clear line and exit code 2.

An evidence command (or `estimate`) says why it could not run in three kinds a script can tell apart: the JSON
report's `errors[].code`, and the first words of the one line on stderr.

- `usage`: an option or a combination of options that cannot work (`--op allreduce`, `--nodes` without a fabric);
- `unknown-model`: an instance type, VM size, machine type or accelerator the tables do not know;
- `unreadable-input`: a file that is missing, unreadable, or holds no NCCL lines / nccl-tests table.
"""


class FabricCheckError(Exception):
    """Bad input, bad usage, or a check that cannot run. The message names the file, field or option."""


class OutputOverInput(FabricCheckError):
    """An output named over a file the run reads: refused before anything is written (not even a report of the
    failure, which would land on that very file)."""


class DumpShapeError(FabricCheckError):
    def __init__(self, where: str, path: str, expected: str) -> None:
        super().__init__(f"{where}: field {path}: expected {expected}")


STDIN_NAME = "standard input (-)"  # how a message names `-`, the file argument that means standard input

USAGE = "usage"
UNKNOWN_MODEL = "unknown-model"
UNREADABLE = "unreadable-input"
# The words the stderr line starts with, per code.
WORDING = {USAGE: "bad usage", UNKNOWN_MODEL: "unknown model", UNREADABLE: "unreadable input"}


class EvidenceError(FabricCheckError):
    """A FabricCheckError (one line, exit 2) that says which kind of failure it is."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{WORDING[code]}: {detail}")
        self.code = code
        self.detail = detail


def usage(detail: str) -> EvidenceError:
    return EvidenceError(USAGE, detail)


def unknown_model(detail: str) -> EvidenceError:
    return EvidenceError(UNKNOWN_MODEL, detail)


def unreadable(detail: str) -> EvidenceError:
    return EvidenceError(UNREADABLE, detail)


def error_entry(error: FabricCheckError) -> dict[str, str]:
    """The report's `errors[]` entry for a failure: its code and its words without the kind's prefix."""
    detail = error.detail if isinstance(error, EvidenceError) else str(error)
    return {"code": code_of(error), "message": detail}


def code_of(error: FabricCheckError) -> str:
    """The kind of a failure; a FabricCheckError raised without one is a usage error (options checked elsewhere)."""
    return error.code if isinstance(error, EvidenceError) else USAGE
