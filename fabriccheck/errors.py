"""Errors the CLI turns into one clear line and exit code 2.

An evidence command (or `estimate`) says why it could not run in three kinds a script can tell apart: the JSON
report's `errors[].code`, and the first words of the one line on stderr.

- `usage`: an option or a combination of options that cannot work (`--op allreduce`, `--nodes` without a fabric);
- `unknown-model`: an instance type, VM size, machine type or accelerator the tables do not know;
- `unreadable-input`: a file that is missing, unreadable, or holds no NCCL lines / nccl-tests table.
"""

from collections.abc import Mapping


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


# A value pydantic refused, as fabriccheck says it: pydantic-core's own messages ("Field required", "Input should be
# a valid number, unable to parse string as a number", "Value error, ...": docs.pydantic.dev, "Validation Errors")
# are a library's words in a user's line. By the error's type; anything else keeps its message, prefixes dropped.
_NOT_A = {
    "float_parsing": "a number",
    "float_type": "a number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "int_type": "a whole number",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a table",
    "string_type": "text",
}
_BOUNDS = {
    "greater_than_equal": ("less than", "ge"),
    "greater_than": ("not more than", "gt"),
    "less_than_equal": ("more than", "le"),
    "less_than": ("not less than", "lt"),
}


def in_our_words(error: Mapping[str, object]) -> str:
    """One of a pydantic ValidationError's errors() in fabriccheck's words (its field is the caller's to name)."""
    kind, value = str(error["type"]), error.get("input")
    ctx = error.get("ctx")
    context = ctx if isinstance(ctx, dict) else {}
    if kind == "missing":
        return "missing"
    if kind in _NOT_A:
        return f"{value!r}: not {_NOT_A[kind]}"
    if kind in _BOUNDS and _BOUNDS[kind][1] in context:
        words, key = _BOUNDS[kind]
        return f"{value!r}: {words} {context[key]}"
    if kind in ("literal_error", "enum") and "expected" in context:
        return f"{value!r} is not one of {context['expected']}"
    if kind == "value_error" and context.get("error") is not None:
        return str(context["error"])  # the check's own words
    if kind == "string_pattern_mismatch" and "pattern" in context:
        return f"{value!r} does not have the form {context['pattern']}"
    if kind == "too_short" and "min_length" in context:
        return f"needs at least {context['min_length']}"
    return str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ").removeprefix("Input ")
