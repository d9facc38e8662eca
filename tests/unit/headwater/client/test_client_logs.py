"""Task logs in ``headwater.client`` against ``httpx.MockTransport``: ``task_logs`` and
``run_logs`` read every page, ``follow_task_logs`` resumes a lost stream after its last
line and stops at ``end``, in both clients."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from headwater import errors
from headwater.client import AsyncClient, Client, TaskLogLine, logs, retry

AT = "2026-03-02T09:14:07.512000+00:00"


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "delay_s", lambda *a: 0.0)


def line(attempt: int, n: int, **more: Any) -> dict[str, Any]:
    return {"attempt": attempt, "line": n, "at": AT, "level": "INFO", "stream": "log",
            "logger": "headwater.task", "message": f"{attempt}.{n}", **more}


def sse(*lines: dict[str, Any], end: bool = False) -> bytes:
    text = "".join(f"id: {x['attempt']}:{x['line']}\nevent: log\ndata: {json.dumps(x)}\n\n"
                   for x in lines)
    return (text + ('event: end\ndata: {"complete":true}\n\n' if end else "")).encode()


def test_task_logs_reads_every_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "PAGE", 2)
    asked: list[httpx.URL] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.url)
        after = request.url.params.get("after")
        lines = {None: [line(1, 1), line(1, 2)], "1:2": [line(2, 1)]}[after]
        last = lines[-1]
        return httpx.Response(200, json={"workflow_id": "wf 1", "node": "fetch",
                                         "index": 3, "lines": lines,
                                         "next": f"{last['attempt']}:{last['line']}",
                                         "complete": False})

    with Client("http://gw", transport=httpx.MockTransport(handler)) as hw:
        got = hw.task_logs("wf 1", "fetch", index=3, attempt=None)
    assert [(x.attempt, x.line) for x in got] == [(1, 1), (1, 2), (2, 1)]
    assert got[0] == TaskLogLine("fetch", 3, 1, 1, AT, "INFO", "log", "headwater.task", "1.1")
    assert asked[0].raw_path.startswith(b"/v1/workflows/wf%201/tasks/fetch/3/logs?")
    assert asked[1].params["after"] == "1:2"


def test_run_logs_follows_next_and_names_each_lines_task() -> None:
    pages = {None: ([line(1, 1, node="a", index=None)], "c1"),
             "c1": ([line(1, 1, node="b", index=0)], None)}

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.params.get("node") == "a"
        found, after = pages[request.url.params.get("after")]
        return httpx.Response(200, json={"workflow_id": "wf", "lines": found, "next": after})

    with Client("http://gw", transport=httpx.MockTransport(handler)) as hw:
        got = hw.run_logs("wf", node="a")
    assert [(x.node, x.index) for x in got] == [("a", None), ("b", 0)]


def _following() -> tuple[list[str | None], Any]:
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("last-event-id"))
        assert request.url.path == "/v1/workflows/wf/tasks/fetch/-/logs"
        assert request.url.params["follow"] == "true"
        if len(seen) == 1:  # the stream closes without its end: the gateway stopped
            return httpx.Response(200, content=sse(line(1, 1), line(1, 2)),
                                  headers={"content-type": "text/event-stream"})
        if len(seen) == 2:
            return httpx.Response(503, json={"title": "Not ready", "status": 503})
        return httpx.Response(200, content=sse(line(1, 2), line(2, 1), end=True),
                              headers={"content-type": "text/event-stream"})

    return seen, handler


def test_following_resumes_after_the_last_line_until_the_end() -> None:
    seen, handler = _following()
    with Client("http://gw", transport=httpx.MockTransport(handler)) as hw:
        got = [(x.attempt, x.line) for x in hw.follow_task_logs("wf", "fetch")]
    assert got == [(1, 1), (1, 2), (2, 1)]
    assert seen == [None, "1:2", "1:2"]


async def test_the_async_client_follows_and_reads_alike() -> None:
    seen, handler = _following()
    async with AsyncClient("http://gw", transport=httpx.MockTransport(handler)) as hw:
        got = [(x.attempt, x.line) async for x in hw.follow_task_logs("wf", "fetch")]
    assert got == [(1, 1), (1, 2), (2, 1)]
    assert seen == [None, "1:2", "1:2"]

    def missing(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"title": "Not found", "status": 404})

    async with AsyncClient("http://gw", transport=httpx.MockTransport(missing)) as hw:
        with pytest.raises(errors.NotFound):
            await hw.task_logs("wf", "fetch")
        with pytest.raises(errors.NotFound):
            await hw.run_logs("wf")
