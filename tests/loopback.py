"""An HTTP server on 127.0.0.1 for the replay endpoints the collector tests drive the real SDKs against."""

from __future__ import annotations

import socket
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


@contextmanager
def closing_endpoint() -> Iterator[tuple[str, threading.Event]]:
    """127.0.0.1: takes each connection and closes it at once, and sets the event. A command that must fail before
    it calls anything shows that it called nothing (the event is not set), whatever the time it took; one that
    calls by mistake fails fast (a reset connection) instead of hanging for its read timeout."""
    with _accepting(hold=False) as endpoint:
        yield endpoint


@contextmanager
def silent_endpoint() -> Iterator[tuple[str, threading.Event]]:
    """127.0.0.1: accepts connections and never answers, so every call hangs until its read timeout; the event is
    set at the first connection."""
    with _accepting(hold=True) as endpoint:
        yield endpoint


@contextmanager
def _accepting(hold: bool) -> Iterator[tuple[str, threading.Event]]:
    """A bare socket on 127.0.0.1 that accepts every connection and sets the event; `hold`: keeps each one open,
    unanswered, until the block ends (else closes it at once)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    connected = threading.Event()
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            if hold:
                held.append(conn)
            connected.set()
            if not hold:
                conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}", connected
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        server.close()
