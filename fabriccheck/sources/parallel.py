"""A bounded pool of worker threads that collectors run their calls on, and that stops at once when its caller
does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def in_parallel(items: Iterable[T], work: Callable[[T], R], max_workers: int = 8) -> Generator[R, None, None]:
    """`work` over `items` on a bounded pool of threads, results in the order of `items`.

    When the caller stops early (Ctrl-C in the main thread, an error, or it simply stops reading), the items not
    started yet are cancelled and nothing waits for the calls under way: the workers are daemon threads, so the
    command ends at once rather than after the slowest network timeout. (ThreadPoolExecutor would join its
    workers when the interpreter exits, even after `shutdown(wait=False, cancel_futures=True)`.)
    """
    items = list(items)
    if len(items) <= 1:
        yield from map(work, items)
        return
    futures: list[Future[R] | None] = [Future() for _ in items]
    pending = iter(range(len(items)))
    take = threading.Lock()

    def worker() -> None:
        while True:
            with take:
                index = next(pending, None)
            if index is None:
                return
            future = futures[index]
            if future is None or not future.set_running_or_notify_cancel():
                continue  # cancelled: the caller has stopped
            try:
                result = work(items[index])
            except BaseException as exc:  # handed to the caller, who raises it in its own thread
                future.set_exception(exc)
            else:
                future.set_result(result)

    for number in range(max(1, min(max_workers, len(items)))):
        threading.Thread(target=worker, name=f"fabriccheck-worker-{number}", daemon=True).start()
    try:
        for index, future in enumerate(futures):
            assert future is not None
            result = future.result()
            # Handed over: let go of it here, so a caller that consumes results one by one (a fleet's raw
            # answers, normalized as they arrive) never holds them all at once.
            futures[index] = future = None
            yield result
    finally:
        for pending_future in futures:
            if pending_future is not None:
                pending_future.cancel()  # a no-op on the ones running or done
