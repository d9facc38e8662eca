"""A stand-in gateway for the command line's tests: a real HTTP server on a free port
that answers each request with the next of its answers and records what it was sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Gateway:
    """Answers each request with the next of ``answers`` (status, document)."""

    url: str = ""
    answers: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    requests: list[tuple[str, str, Any]] = field(default_factory=list)


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    gw = Gateway()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, body: Any) -> None:
            gw.requests.append((self.command, self.path, body))
            status, doc = gw.answers.pop(0)
            data = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json" if status < 400
                             else "application/problem+json")
            if status == 503:
                self.send_header("retry-after", "0")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            self._answer(json.loads(self.rfile.read(length)))

        def do_GET(self) -> None:
            self._answer(None)

        def log_message(self, *args: Any) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    gw.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield gw
    finally:
        server.shutdown()
        server.server_close()
