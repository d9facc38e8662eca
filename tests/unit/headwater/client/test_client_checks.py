"""``headwater.client`` refuses what it cannot send before sending it (an empty id or
name, a timeout that is not a finite number >= 0), takes an unexpected redirect as an
error, and passes ``queue_anyway`` on (against ``httpx.MockTransport``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from headwater import errors
from headwater.client import AsyncClient, Client

DONE = {"id": "wf-1", "name": "n", "status": "succeeded", "seq": 4, "output": 1,
        "error": ""}


class Recorder:
    """Answers every request with a new ``status`` response of ``doc`` (and
    ``headers``), and records it."""

    def __init__(self, status: int = 200, doc: Any = DONE,
                 headers: dict[str, str] | None = None) -> None:
        self.seen: list[httpx.Request] = []
        self.status, self.doc, self.headers = status, doc, headers

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        return httpx.Response(self.status, json=self.doc, headers=self.headers)


def client(recorder: Recorder) -> Client:
    return Client("http://gw", retries=0, transport=httpx.MockTransport(recorder))


EMPTY: list[Callable[[Client], Any]] = [
    lambda hw: hw.get(""), lambda hw: hw.result(""), lambda hw: hw.cancel(""),
    lambda hw: hw.run(""), lambda hw: hw.run("d", id=""),
    lambda hw: hw.submit(definition=""), lambda hw: hw.submit(definition="d", id=""),
    lambda hw: hw.definitions.get(""), lambda hw: hw.definitions.delete(""),
    lambda hw: hw.definitions.put("", {"name": "x", "nodes": []}),
    lambda hw: hw.signal("", "go", {}), lambda hw: list(hw.events("")),
]


@pytest.mark.parametrize("call", EMPTY)
def test_an_empty_id_or_name_is_refused_before_sending(call: Callable[[Client], Any]) -> None:
    recorder = Recorder()
    with client(recorder) as hw, pytest.raises(ValueError, match="empty"):
        call(hw)
    assert recorder.seen == []


@pytest.mark.parametrize("status", [301, 302, 307, 308, 304])
def test_a_redirect_is_an_error_with_its_status(status: int) -> None:
    answer = Recorder(status, None, {"Location": "/v1/workflows"})
    with client(answer) as hw, pytest.raises(errors.HeadwaterHTTPError) as raised:
        hw.get("wf-1")
    assert raised.value.status == status


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), -1.0])
async def test_a_timeout_that_is_not_finite_and_at_least_0_is_refused(bad: float) -> None:
    recorder = Recorder()
    with client(recorder) as hw:
        for call in (lambda: hw.run("d", timeout=bad), lambda: hw.result("wf-1", timeout=bad),
                     lambda: Client("http://gw", timeout=bad)):
            with pytest.raises(ValueError, match="timeout must be a finite number"):
                call()
    async with AsyncClient("http://gw", transport=httpx.MockTransport(recorder)) as ahw:
        with pytest.raises(ValueError, match="timeout must be a finite number"):
            await ahw.run("d", timeout=bad)
        with pytest.raises(ValueError, match="timeout must be a finite number"):
            await ahw.result("wf-1", timeout=bad)
    assert recorder.seen == []


async def test_queue_anyway_is_passed_on_only_when_asked() -> None:
    recorder = Recorder(202, {"id": "wf-1", "status": "accepted"})
    with client(recorder) as hw:
        hw.submit(definition="d", queue_anyway=True)
        hw.submit(definition="d")
        hw.run("d", mode="async", queue_anyway=True)
        hw.run("d", mode="async")
    async with AsyncClient("http://gw", transport=httpx.MockTransport(recorder)) as ahw:
        await ahw.submit(definition="d", queue_anyway=True)
        await ahw.run("d", mode="async", queue_anyway=True)
    bodies = [json.loads(r.content).get("queue_anyway") for r in recorder.seen
              if r.url.path == "/v1/workflows"]
    params = [r.url.params.get("queue_anyway") for r in recorder.seen
              if r.url.path == "/v1/run/d"]
    assert bodies == [True, None, True]
    assert params == ["true", None, "true"]


@pytest.mark.parametrize(("content", "kind"), [
    (b"<html>a proxy's page</html>", "JSONDecodeError"),
    (b"[1, 2]", "AttributeError"),
    (b"{}", "KeyError"),
    (b'{"id": "wf-1", "status": "running", "seq": "NaN", "name": "x"}', "Error"),
], ids=["html", "array", "empty", "bad-seq"])
async def test_a_2xx_answer_that_is_not_the_api_s_is_one_error(content: bytes,
                                                               kind: str) -> None:
    """A proxy or another service answering 200: ``UnexpectedAnswer``, naming the request,
    rather than the decoding's own ``KeyError`` or ``JSONDecodeError``."""
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=content,
                              headers={"content-type": "application/json"})

    hw = Client("http://gw", retries=0, transport=httpx.MockTransport(answer))
    with pytest.raises(errors.UnexpectedAnswer, match=r"GET /v1/workflows/wf-1: the 200 "
                                                      rf"answer .*{kind}") as caught:
        hw.get("wf-1")
    assert caught.value.status == 200
    async with AsyncClient("http://gw", transport=httpx.MockTransport(answer)) as ahw:
        with pytest.raises(errors.UnexpectedAnswer):
            await ahw.get("wf-1")
