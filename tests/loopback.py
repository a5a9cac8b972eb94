"""An HTTP server on 127.0.0.1 for the replay endpoints the collector tests drive the real SDKs against."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], daemon_threads: bool = False) -> Iterator[str]:
    """`handler` answering on a free port of 127.0.0.1 while the block runs; yields the base URL.
    `daemon_threads`: requests still being answered (a client that gave up) do not hold the shutdown."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = daemon_threads
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
