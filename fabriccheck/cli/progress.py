"""The progress display of a live collection."""

from __future__ import annotations

import sys
from typing import Any

from fabriccheck.cli.app import say
from fabriccheck.cli.mode import MODE


class progress:
    """While collecting: on a terminal, a status line on stderr (scopes done and failed, nodes found, the call
    under way); elsewhere, with --verbose, one log line on stderr per scope as it finishes. Nothing else, and with
    --quiet nothing at all."""

    def __init__(self, verbose: bool = False) -> None:
        self.verbose = verbose

    def __enter__(self) -> Any:
        from fabriccheck.sources.fleet import Tally
        from fabriccheck.sources.progress import Progress

        self.status = None
        tally = Tally()
        if MODE.quiet:  # --quiet: no progress, only the verdict and errors
            return Progress()
        if sys.stderr.isatty():
            from rich.console import Console

            self.status = Console(stderr=True).status("collecting")
            self.status.start()
            status = self.status

            def step(scope: str, what: str) -> None:
                done = f"{tally.line()} · " if tally.total else ""
                status.update(f"collecting: {done}{scope} {what}")

            def planned(total: int) -> None:
                tally.total = total

            def finished(scope: Any) -> None:
                tally.add(scope)
                status.update(f"collecting: {tally.line()}")

            return Progress(step=step, planned=planned, finished=finished)
        if self.verbose:

            def log(scope: Any) -> None:
                tally.add(scope)
                where = " ".join(w for w in (scope.provider, scope.account, scope.region or "") if w)
                how = "complete" if scope.complete else f"INCOMPLETE ({scope.reason})"
                say(
                    f"fabriccheck: {where}: {how}, {scope.nodes:,} nodes, {scope.api_calls:,} API requests, "
                    f"{scope.retries:,} retries [{tally.line()}]"
                )

            return Progress(planned=lambda total: setattr(tally, "total", total), finished=log)
        return Progress()

    def __exit__(self, *exc: object) -> None:
        if self.status is not None:
            self.status.stop()
