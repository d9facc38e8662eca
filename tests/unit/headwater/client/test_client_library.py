"""``headwater.client`` against ``httpx.MockTransport`` (HTTP only: the gateway's answers
as docs/client.md documents them): problem documents mapped to the exception tree, retries
with the same id, the run modes' headers, and event streams resumed with
``Last-Event-ID``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from headwater import errors
from headwater.client import AsyncClient, Client, retry
from headwater.client.types import Run

Handler = Callable[[httpx.Request], httpx.Response]
DONE = {"id": "wf-1", "name": "n", "status": "succeeded", "seq": 4, "output": {"x": 1},
        "error": "", "definition": {"name": "d", "version": 2}}


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries without waiting."""
    monkeypatch.setattr(retry, "delay_s", lambda *a: 0.0)


def client(handler: Handler, retries: int = 3) -> Client:
    return Client("http://gw", retries=retries, transport=httpx.MockTransport(handler))


def problem(status: int, title: str, detail: str = "", **extra: Any) -> httpx.Response:
    return httpx.Response(status, json={"type": "about:blank", "title": title,
                                        "status": status, "detail": detail, **extra},
                          headers={"content-type": "application/problem+json"})


@pytest.mark.parametrize(("status", "kind"), [
    (400, errors.BadRequest), (404, errors.NotFound), (409, errors.Conflict),
    (410, errors.Gone), (422, errors.Unprocessable), (429, errors.TooManyRequests),
    (500, errors.HeadwaterHTTPError)])
def test_a_problem_document_is_raised_as_its_class(status: int,
                                                   kind: type[Exception]) -> None:
    answer = problem(status, "Bad", "what went wrong", errors=["input.a: required"])
    with client(lambda r: answer) as hw, pytest.raises(kind) as raised:
        hw.get("wf-1")
    error = raised.value
    assert isinstance(error, errors.HeadwaterHTTPError)
    assert (error.status, error.type, error.title, error.detail) == (
        status, "about:blank", "Bad", "what went wrong")
    assert error.body["errors"] == ["input.a: required"]


def test_429_carries_retry_after_and_a_non_json_error_its_text() -> None:
    answers = iter([httpx.Response(429, json={"title": "Queue full"},
                                   headers={"Retry-After": "7"}),
                    httpx.Response(502, text="bad gateway")])
    with client(lambda r: next(answers)) as hw:
        with pytest.raises(errors.TooManyRequests) as full:
            hw.get("wf-1")
        assert full.value.retry_after == 7.0
        with pytest.raises(errors.HeadwaterHTTPError) as other:
            hw.get("wf-1")
        assert other.value.status == 502 and other.value.detail == "bad gateway"


def test_a_submission_is_retried_with_the_id_chosen_before_the_first_try() -> None:
    bodies: list[dict[str, Any]] = []
    answers: Iterator[Callable[[], httpx.Response]] = iter([
        lambda: (_ for _ in ()).throw(httpx.ConnectError("refused")),
        lambda: problem(503, "Kafka unavailable"),
        lambda: httpx.Response(202, json={"id": bodies[0]["id"], "status": "accepted"})])

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return next(answers)()

    with client(handler) as hw:
        submitted = hw.submit({"name": "n", "nodes": []}, input={"a": 1})
    assert len(bodies) == 3 and len({b["id"] for b in bodies}) == 1
    assert submitted.id == bodies[0]["id"] and submitted.id.startswith("wf-")
    assert submitted.created and bodies[0]["workflow"] == {"name": "n", "nodes": []}


def test_retries_are_bounded() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ConnectError("refused")

    with client(handler, retries=2) as hw, pytest.raises(errors.GatewayUnreachable):
        hw.submit(definition="d", id="mine")
    assert len(calls) == 3
    with client(lambda r: problem(503, "Not ready"), retries=1) as hw, \
            pytest.raises(errors.Unavailable):
        hw.get("wf-1")


def test_the_run_modes_ask_as_the_gateway_expects() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.headers.get("prefer") == "respond-async":
            return httpx.Response(202, json={"id": "wf-2", "status": "accepted"})
        return httpx.Response(200, json=DONE)

    with client(handler) as hw:
        done = hw.run("docs@2", {"q": 1}, timeout=5, id="wf-1")
        later = hw.run("docs", mode="async")
    assert isinstance(done, Run) and done.done and done.output == {"x": 1}
    assert done.workflow is not None and done.workflow.definition is not None
    assert done.workflow.definition.version == 2
    assert later == Run("wf-2", "accepted", False)
    assert seen[0].url.path == "/v1/run/docs@2" and json.loads(seen[0].content) == {"q": 1}
    assert seen[0].url.params["timeout"] == "5" and seen[0].url.params["id"] == "wf-1"
    assert seen[1].headers["prefer"] == "respond-async"


def sse(*events: tuple[int, str, dict[str, Any]]) -> httpx.Response:
    text = "".join(f"id: {i}\nevent: {t}\ndata: {json.dumps(d)}\n\n" for i, t, d in events)
    return httpx.Response(200, text=": ping\n\n" + text,
                          headers={"content-type": "text/event-stream"})


def test_events_resume_with_last_event_id_without_loss_or_repeat() -> None:
    asked: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if not request.url.path.endswith("/events"):
            return httpx.Response(200, json={**DONE, "status": "running"})
        asked.append(request.headers.get("last-event-id"))
        if len(asked) == 1:
            return sse((1, "WorkflowAccepted", {}), (2, "TaskDispatched", {}))
        if len(asked) == 2:
            raise httpx.ReadError("connection reset")
        return sse((2, "TaskDispatched", {}), (3, "TaskSucceeded", {}),
                   (4, "WorkflowSucceeded", {"output": 1}))

    with client(handler) as hw:
        events = list(hw.events("wf-1"))
    assert [e.id for e in events] == [1, 2, 3, 4] and events[-1].terminal
    assert asked == [None, "2", "2"]


def test_result_returns_the_output_or_raises_how_the_run_ended() -> None:
    docs = {"wf-ok": DONE, "wf-bad": {**DONE, "status": "failed", "error": "boom"},
            "wf-stop": {**DONE, "status": "cancelled", "error": "asked"}}
    with client(lambda r: httpx.Response(200, json=docs[r.url.path.rsplit("/", 1)[1]])) as hw:
        assert hw.result("wf-ok") == {"x": 1}
        with pytest.raises(errors.WorkflowFailed, match="boom"):
            hw.result("wf-bad")
        with pytest.raises(errors.WorkflowCancelled):
            hw.result("wf-stop")


def test_result_times_out_while_the_run_goes_on() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/events"):
            return sse((1, "WorkflowAccepted", {}))  # ends without the terminal event
        return httpx.Response(200, json={**DONE, "status": "running", "seq": 0})

    with client(handler, retries=1000) as hw, pytest.raises(TimeoutError, match=r"0\.3 s"):
        hw.result("wf-1", timeout=0.3)


async def test_the_async_client_maps_and_retries_alike() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        if len(bodies) == 1:
            return problem(503, "Kafka unavailable")
        return problem(409, "Conflict", "taken")

    async with AsyncClient("http://gw", transport=httpx.MockTransport(handler)) as hw:
        with pytest.raises(errors.Conflict, match="taken"):
            await hw.submit(definition="d")
    assert len(bodies) == 2 and bodies[0]["id"] == bodies[1]["id"]


def test_a_streamed_run_names_itself_once_and_resumes_on_the_events_path() -> None:
    asked: list[tuple[str, str, str | None]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append((request.method, request.url.path, request.headers.get("last-event-id")))
        if request.method == "POST":
            accepted = "event: accepted\ndata: {\"id\": \"wf-9\", \"status\": \"accepted\"}\n\n"
            first = sse((1, "WorkflowAccepted", {}), (2, "TaskDispatched", {}))
            return httpx.Response(200, content=accepted.encode() + first.content,
                                  headers={"content-type": "text/event-stream"})
        if request.url.path.endswith("/events"):
            return sse((2, "TaskDispatched", {}), (3, "WorkflowSucceeded", {}))
        return httpx.Response(200, json={**DONE, "status": "running"})

    with client(handler) as hw:
        events = list(hw.run("docs", {"q": 1}, mode="stream", id="wf-9"))
    assert [(e.id, e.type) for e in events] == [
        (0, "accepted"), (1, "WorkflowAccepted"), (2, "TaskDispatched"),
        (3, "WorkflowSucceeded")]
    assert events[0].data["id"] == "wf-9"
    assert asked == [("POST", "/v1/run/docs", None), ("GET", "/v1/workflows/wf-9", None),
                     ("GET", "/v1/workflows/wf-9/events", "2")]


def test_run_sends_its_priority_and_submit_its_own() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(202, json={"id": "wf-1", "status": "accepted"})

    with client(handler) as hw:
        hw.run("docs", {"q": 1}, mode="async", id="wf-1", priority="high")
        hw.run("docs", mode="async", id="wf-1", priority=0)
        hw.run("docs", mode="async", id="wf-1", queue_anyway=True, cache_refresh=True)
        hw.submit({"name": "n", "nodes": [{"id": "a", "task": "t"}]}, id="wf-1", priority=8)
    assert [r.url.params.get("priority") for r in seen[:3]] == ["high", "0", None]
    assert seen[2].url.params["queue_anyway"] == "true"
    assert [r.url.params.get("cache") for r in seen] == [None, None, "refresh", None]
    assert json.loads(seen[3].content)["priority"] == 8


async def test_the_async_client_runs_at_a_priority_too() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(202, json={"id": "wf-1", "status": "accepted"})

    async with AsyncClient("http://gw", transport=httpx.MockTransport(handler)) as hw:
        ran = await hw.run("docs", mode="async", id="wf-1", priority=7)
    assert ran.id == "wf-1" and seen[0].url.params["priority"] == "7"


def test_rerun_and_reset_may_ask_for_a_cache_refresh() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(202, json={"id": "wf-2", "status": "accepted"})

    with client(handler) as hw:
        hw.rerun("wf-1", id="wf-2")
        hw.rerun("wf-1", id="wf-3", from_node="embed", cache_refresh=True)
    assert [(r.url.path, r.url.params.get("cache")) for r in seen] == [
        ("/v1/workflows/wf-1/rerun", None), ("/v1/workflows/wf-1/reset", "refresh")]
    assert json.loads(seen[1].content) == {"id": "wf-3", "node": "embed"}
