"""A stand-in gateway for CLI tests: a real HTTP server on 127.0.0.1 (an ephemeral
port) in a thread, answering each request with what a function of it says."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, str, Any], tuple[int, Any]]
"""``(method, path with query, JSON body or None) -> (status, JSON document or None)``;
an error status is sent as ``application/problem+json``."""


@contextlib.contextmanager
def serve(answer: Answer) -> Iterator[str]:
    """Serve ``answer`` until the block ends; yields the server's base URL."""

    class Handler(BaseHTTPRequestHandler):
        def reply(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            status, doc = answer(self.command, self.path, body)
            data = b"" if doc is None else json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("content-type", "application/problem+json" if status >= 400
                             else "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = reply

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # shutdown() waits for the loop's next poll: 0.5 s by default, per test
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
