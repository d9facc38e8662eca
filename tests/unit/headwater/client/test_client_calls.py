"""``ctx.call`` and kin (``headwater.client.calls``): child ids that do not depend on the
attempt, results in order, a failed child raising, and the client kept out of
``import headwater``."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from typing import Any

import httpx
import pytest

from headwater.client import Client, calls
from headwater.context import AttemptInfo, TaskContext
from headwater.errors import AttemptCancelled, CallFailed, NonRetryableError
from headwater.topics import WORKFLOW_ID_PATTERN


def test_child_ids_name_the_task_and_the_call_not_the_attempt() -> None:
    assert calls.child_id("wf-1", "fan", None, 0) == "wf-1:fan:call.0"
    assert calls.child_id("wf-1", "fan", 3, 12) == "wf-1:fan.3:call.12"
    long = calls.child_id("w" * 200, "fan", None, 0)
    assert long.startswith("call-") and len(long) == 45
    for workflow_id in ("wf-1:fan.3:call.12", long):
        assert re.fullmatch(WORKFLOW_ID_PATTERN, workflow_id)


class Gateway:
    """A gateway stand-in: records submissions, answers each run's document."""

    def __init__(self, status: dict[str, str] | None = None) -> None:
        self.submitted: list[dict[str, Any]] = []
        self.status = status or {}
        self.refuse: dict[str, int] = {}  # definition: the status its submission gets

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            body = json.loads(request.content)
            self.submitted.append(body)
            if body["definition"] in self.refuse:
                return httpx.Response(self.refuse[body["definition"]], json={
                    "type": "about:blank", "title": "No", "detail": f"no {body['definition']}"},
                    headers={"content-type": "application/problem+json"})
            return httpx.Response(202, json={"id": body["id"], "status": "accepted"})
        workflow_id = request.url.path.rsplit("/", 1)[1]
        status = self.status.get(workflow_id, "succeeded")
        return httpx.Response(200, json={"id": workflow_id, "status": status, "seq": 3,
                                         "output": f"out of {workflow_id}",
                                         "error": "it broke" if status == "failed" else ""})


@pytest.fixture
def gateway(monkeypatch: pytest.MonkeyPatch) -> Gateway:
    fake = Gateway()
    monkeypatch.setattr(calls, "Client", lambda url: Client(
        url, transport=httpx.MockTransport(fake)))
    return fake


def context(attempt: int) -> TaskContext:
    return TaskContext(AttemptInfo("wf-1", "fan", 2, attempt), gateway_url="http://gw")


def test_a_retried_attempt_submits_the_same_children_and_gets_results_in_order(
        gateway: Gateway) -> None:
    first = context(1)
    assert first.call("child", {"n": 0}) == "out of wf-1:fan.2:call.0"
    calls = [("child@2", {"n": i}) for i in range(3)]
    assert first.call_parallel(calls) == [f"out of wf-1:fan.2:call.{i}" for i in (1, 2, 3)]
    context(2).call("child", {"n": 0})
    ids = [s["id"] for s in gateway.submitted]
    assert ids == ["wf-1:fan.2:call.0", *(f"wf-1:fan.2:call.{i}" for i in (1, 2, 3)),
                   "wf-1:fan.2:call.0"]
    link = {"workflow_id": "wf-1", "node": "fan", "index": 2, "attempt": 1}
    assert gateway.submitted[1] == {"id": "wf-1:fan.2:call.1", "definition": "child@2",
                                    "input": {"n": 0}, "parent": link}
    assert gateway.submitted[-1]["parent"] == {**link, "attempt": 2}  # the retry's link


def test_a_failed_child_raises_without_retry(gateway: Gateway) -> None:
    gateway.status["wf-1:fan.2:call.1"] = "failed"
    with pytest.raises(CallFailed, match=re.escape("wf-1:fan.2:call.1 failed: it broke")) as failed:
        context(1).call_parallel([("child", 1), ("child", 2), ("child", 3)])
    assert failed.value.status == "failed" and len(gateway.submitted) == 3


async def test_the_async_twins_and_the_blocking_guard(gateway: Gateway,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from headwater.client.aio import AsyncClient

    monkeypatch.setattr(calls, "AsyncClient", lambda url: AsyncClient(
        url, transport=httpx.MockTransport(gateway)))
    ctx = context(1)
    assert await ctx.acall_parallel([("c", 1), ("c", 2)]) == [
        "out of wf-1:fan.2:call.0", "out of wf-1:fan.2:call.1"]
    with pytest.raises(RuntimeError, match=re.escape("await ctx.acall")):
        ctx.call("c", 3)


def test_a_stopped_attempt_stops_calling(gateway: Gateway) -> None:
    class Stopped:
        stop_reason = "cancelled"

        def checkpoint(self, state: Any) -> Any:
            raise AssertionError

    ctx = TaskContext(AttemptInfo("wf-1", "fan", None, 1), runtime=Stopped())
    with pytest.raises(AttemptCancelled):
        ctx.call("child", {})
    assert gateway.submitted == []


def test_import_headwater_stays_without_the_client() -> None:
    code = ("import sys, headwater; bad = [m for m in sys.modules if m.startswith("
            "('httpx', 'headwater.client'))]; print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("status", [404, 410, 422])
async def test_a_child_the_gateway_refuses_for_good_is_not_retried(
        gateway: Gateway, monkeypatch: pytest.MonkeyPatch, status: int) -> None:
    from headwater.client.aio import AsyncClient

    monkeypatch.setattr(calls, "AsyncClient", lambda url: AsyncClient(
        url, transport=httpx.MockTransport(gateway)))
    gateway.refuse["gone@2"] = status
    with pytest.raises(NonRetryableError, match=re.escape(f"'gone@2' refused ({status}): "
                                                          "no gone@2")) as refused:
        await context(1).acall("gone@2", {})
    assert isinstance(refused.value, calls.CallRefused)
    assert (refused.value.definition, refused.value.status) == ("gone@2", status)
    with pytest.raises(calls.CallRefused):
        await asyncio.to_thread(context(1).call, "gone@2", {})
