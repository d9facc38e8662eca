"""Fixtures of the command line's tests: a stand-in gateway (a real HTTP server on a free
port that answers each request with the next of its answers, or with a standing answer,
and records what it was sent), and a stack home of the test's own for the local stack's
processes (``home``; a real process such as ``SLEEPER`` stands in for a service)."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ops import localstack

SLEEPER = (sys.executable, "-c", "import time; time.sleep(120)")
"""A process that stands in for a service: it runs until stopped (two minutes at most)."""

Answer = tuple[int, dict[str, Any]]
"""An HTTP status and the JSON document answered with it."""


@dataclass
class Gateway:
    """Answers each request with the next of ``answers``; once they are used up, with
    ``standing[path]`` (every time), else ``otherwise``.

    Attributes:
        url: where it listens (``http://127.0.0.1:<port>``).
        answers: the answers still to give, in order.
        requests: ``(method, path, JSON body or None)`` of each request received.
        standing: path -> the answer to every request of that path.
        otherwise: the answer to every other request (None: the request fails).
        authorizations: the ``Authorization`` header of each request (None: none).
        guard: asked first with the path and that header; its answer, if any, is given
            (a stand-in for a gateway with auth on).
    """

    url: str = ""
    answers: list[Answer] = field(default_factory=list)
    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    standing: dict[str, Answer] = field(default_factory=dict)
    otherwise: Answer | None = None
    authorizations: list[str | None] = field(default_factory=list)
    guard: Callable[[str, str | None], Answer | None] | None = None

    def answer(self, path: str, authorization: str | None = None) -> Answer:
        """The answer to a request of ``path``.

        Raises:
            IndexError: none is left for it.
        """
        self.authorizations.append(authorization)
        guarded = self.guard(path, authorization) if self.guard else None
        if guarded is not None:
            return guarded
        if self.answers:
            return self.answers.pop(0)
        found = self.standing.get(path, self.otherwise)
        if found is None:
            raise IndexError(f"the stand-in gateway has no answer left for {path}")
        return found


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    gw = Gateway()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, body: Any) -> None:
            gw.requests.append((self.command, self.path, body))
            status, doc = gw.answer(self.path, self.headers.get("authorization"))
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
    # shutdown() waits for the loop's next poll: 0.5 s by default, per test
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    gw.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield gw
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``HEADWATER_HOME`` of the test's own (``tmp_path``); the processes the test
    started there are stopped after it."""
    monkeypatch.setenv("HEADWATER_HOME", str(tmp_path))
    yield tmp_path
    for path in (tmp_path / "run").glob("*.pid"):
        localstack.stop(localstack.Service(path.stem, ()), timeout_s=1)
