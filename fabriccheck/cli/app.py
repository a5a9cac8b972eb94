"""The typer app every command registers on, its plain help, and the run's plain outputs: stdout, one line on
stderr, a file. Imports typer and nothing heavy: `fabriccheck --help` loads this and the command modules only."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Annotated, Any

import typer

from fabriccheck.cli.mode import MODE
from fabriccheck.stdout import write_stdout


class _Flag:
    """Coerces a flag's value by leaving it as it is (see _PlainHelp)."""

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        return value


class _PlainHelp:
    """Typer coerces every option's value through a pydantic TypeAdapter, built on first use, and the
    `--help` flag of the app is processed (value unset) before any command runs: `fabriccheck azure --help`
    imported pydantic (a third of its start-up) to coerce nothing. A flag needs no coercion. Typer versions
    without per-option coercion (no `_runtime_param`) are left alone."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None and getattr(option, "_runtime_param", False) is None:
            option._runtime_param = _Flag()
        return option


class _Group(_PlainHelp, typer.core.TyperGroup):
    pass


class Command(_PlainHelp, typer.core.TyperCommand):
    """Help in plain words: `check [OPTIONS] FILE` and `FILE  Inventory saved ...`, not `{FILE}` and
    `FILE <path>` (the options carry their own plain metavars)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces: list[str] = super().collect_usage_pieces(ctx)
        return [p[1:-1] if p.startswith("{") and p.endswith("}") else p for p in pieces]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments: list[tuple[str, str]] = []
        options: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                arguments.append((param.metavar or (param.name or "").upper(), record[1]))
            else:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="Print only the verdict line and errors: no progress, tables or warnings (files are written whole).",
    ),
]
NoColorOpt = Annotated[bool, typer.Option("--no-color", help="No colour (as NO_COLOR=1 does).")]
_MODE_PARAMS = ("quiet", "no_color")


def with_output_mode(command: Callable[..., Any]) -> Callable[..., Any]:
    """The command with --quiet and --no-color added (declared once, above), which set cli.mode.MODE before it runs
    and are not passed to it."""
    signature = inspect.signature(command, eval_str=True)
    added = [
        inspect.Parameter("quiet", inspect.Parameter.KEYWORD_ONLY, annotation=QuietOpt, default=False),
        inspect.Parameter("no_color", inspect.Parameter.KEYWORD_ONLY, annotation=NoColorOpt, default=False),
    ]

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        MODE.quiet, MODE.no_color = bool(kwargs.pop("quiet", False)), bool(kwargs.pop("no_color", False))
        return command(*args, **kwargs)

    parameters = [*signature.parameters.values(), *added]
    run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": signature.return_annotation}
    return run


class _App(typer.Typer):
    """Every command registered gets --quiet and --no-color (with_output_mode)."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:  # type: ignore[override]
        register = super().command(*args, **kwargs)

        def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
            register(with_output_mode(function))
            return function

        return decorate


app = _App(
    name="fabriccheck",
    help="Find cloud GPU-cluster settings that leave the training fabric (EFA, InfiniBand, GPUDirect) "
    "unused, and estimate what they cost.",
    no_args_is_help=True,
    # --install-completion / --show-completion (bash, zsh, fish, PowerShell), and -h beside --help everywhere.
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    cls=_Group,
)

# When the command line was parsed: a scan's duration in its report counts from here.
STARTED: list[float] = []


def _version(value: bool) -> None:
    if value:
        from fabriccheck.version import __version__

        write_stdout(f"fabriccheck {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_version, help="Print the version and exit."),
    ] = False,
) -> None:
    """The options before the command (the app's help text is its `help=` above)."""
    import time

    STARTED.append(time.perf_counter())


def say(line: str) -> None:
    """One line on stderr: credentials masked and control characters written out (`\\x1b`, `\\n`), so that a value it
    quotes (a key holding ESC[2J or a newline) can neither clear the screen nor forge a second line; a value of
    any length it quotes is cut to a few hundred characters (safe.clipped)."""
    from fabriccheck.redaction import redact
    from fabriccheck.reports.safe import clipped, visible

    with suppress(OSError, ValueError, AttributeError):  # no stderr left to say it on: nothing more to do
        sys.stderr.write(visible(clipped(redact(line))) + "\n")
        sys.stderr.flush()


def warn(line: str) -> None:
    """A warning on stderr (say), unless --quiet: then only errors are printed."""
    if not MODE.quiet:
        say(line)


def write(path: Path, text: str, option: str) -> None:
    """`text` in the file `path` that `option` names, put in place whole (never half written)."""
    from fabriccheck.outputs import write_atomic

    write_atomic(path, text.encode(), option)


def emit(text: str, output: Path | None) -> None:
    """`text` on stdout, or in --output FILE (`-`: stdout)."""
    if output is not None and str(output) != "-":
        write(output, text, "--output")
    else:
        write_stdout(text)
