"""The cyclic garbage collector paused while a large answer is parsed and normalized (collectors, judging)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc(freeze: bool = True) -> Iterator[None]:
    """Parsing a large answer and normalizing it builds hundreds of thousands of small objects beside the
    parsed document; the cyclic collector would rescan that document again and again (a 190 MB dump
    normalizes 2.5x slower with it). Pause it for that stretch only, then freeze what survived (the model)
    so that later collections do not rescan it either. A live collection of many scopes passes freeze=False:
    freezing there would also pin the SDK clients other scopes still hold (and any garbage), so memory would
    grow with the estate; it settles once at the end instead (sources.fleet.settle_gc). Judging (flow.run)
    passes freeze=False too: a freeze is the whole process's, and a library caller's garbage is not ours to pin."""
    global _pauses, _resume
    with _pause_lock:  # collectors parse in several threads; the collector comes back after the last one
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0:
                if freeze:
                    gc.freeze()
                if _resume:
                    gc.enable()


_pause_lock = threading.Lock()
_pauses = 0
_resume = True
