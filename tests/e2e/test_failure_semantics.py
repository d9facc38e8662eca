"""Timeouts, cancelling a running map, error routes and continue-on-error on the real
broker (the rules themselves are tabled in tests/unit/headwater/test_machine_*.py)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import aconnect_sse
from stackkit import BOOTSTRAP, TASKS, Stack, history, read_topic
from test_kafka_submission import wait_status

from headwater import codec
from headwater.core import events as ev
from ops import localstack
from services.common.topic_reader import TopicReader
from tests.polling import holds_for_async, scaled, wait_until_async


async def _submit(client: httpx.AsyncClient, spec: dict[str, object],
                  prefix: str, input: object = None, **extra: object) -> str:
    workflow_id = f"{prefix}-{uuid.uuid4().hex[:8]}"
    body: dict[str, object] = {"id": workflow_id, "workflow": spec, **extra}
    if input is not None:
        body["input"] = input
    response = await client.post("/v1/workflows", json=body)
    assert response.status_code == 202, response.text
    return workflow_id


async def test_an_attempt_that_exceeds_its_timeout_fails_and_is_retried(stack: Stack) -> None:
    spec = {"name": "too-slow", "nodes": [
        {"id": "nap", "task": "e2e.sleep", "input": {"seconds": 30}, "timeout": 1,
         "retry": {"max_attempts": 2, "backoff_base": 0.2}}]}
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        workflow_id = await _submit(client, spec, "timeout")
    status = await wait_status(stack, workflow_id)
    elapsed = time.monotonic() - started
    assert status["status"] == "failed", status
    assert "TimeoutError" in str(status["error"])
    assert elapsed < scaled(15), f"two 1 s attempts took {elapsed:.1f} s"
    records = await history(stack, workflow_id)
    failed = [r.body for r in records if isinstance(r.body, ev.TaskFailed)]
    assert [f.attempt for f in failed] == [1, 2]
    assert {f.error_type for f in failed} == {"TimeoutError"}
    dispatched = [r.body for r in records if isinstance(r.body, ev.TaskDispatched)]
    for d, f in zip(dispatched, failed, strict=True):
        assert d.timeout_s == 1.0
        assert 900 <= f.at_ms - d.at_ms <= scaled(5) * 1000, (d.at_ms, f.at_ms)
    # Whichever of the coordinator's deadline and the worker's own timeout came second
    # was recorded as discarded and changed nothing.
    assert all(r.body.report == "TaskFailed" for r in records
               if isinstance(r.body, ev.ReportDiscarded))


async def test_cancelling_a_100_item_map_mid_run_stops_its_running_attempts(
        stack: Stack, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    spec = {"name": "big-map", "nodes": [
        {"id": "m", "kind": "map", "over": "${input.items}", "task": "e2e.marked_sleep",
         "max_concurrency": 6,  # below the worker's 8 slots: all of them run
         "input": {"seconds": "${item}", "marks": str(marks)}}]}
    # 20 quick items first, then 80 that would take 20 s each
    items = [0.05] * 20 + [20.0] * 80
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        workflow_id = await _submit(client, spec, "cancel-map", {"items": items})
        await wait_until_async(lambda: _marked(marks, "done"), 60, "the 20 quick items done",
                               until=lambda done: len(done) >= 20)
        # The slow ones run: 6 of them started (and are running), after the 20 quick ones.
        await wait_until_async(lambda: _marked(marks, "started"), 30,
                               "the 20 quick and 6 slow items started",
                               until=lambda started: len(started) >= 26)
        response = await client.post(f"/v1/workflows/{workflow_id}/cancel",
                                     json={"reason": "enough"})
        assert response.status_code == 202, response.text
        cancelled_at = time.time()
        status = await wait_status(stack, workflow_id)
        assert status["status"] == "cancelled"
        assert (await client.post(f"/v1/workflows/{workflow_id}/cancel")).status_code == 409
    records = sorted(await history(stack, workflow_id), key=lambda r: r.seq)
    types = [r.type for r in records]
    cut = types.index("WorkflowCancelled")
    assert cut == len(types) - 1
    dispatched = [r.body for r in records if isinstance(r.body, ev.TaskDispatched)]
    cancelled = [r.body for r in records if isinstance(r.body, ev.TaskCancelled)]
    first_cancel = types.index("TaskCancelled")
    assert "TaskDispatched" not in types[first_cancel:]
    assert len(dispatched) == 26  # 20 quick ones, then 6 slow ones in flight
    assert len(cancelled) == 6
    assert {c.reason for c in cancelled} == {"enough"}

    # The running attempts were stopped by their worker, not left to finish.
    await wait_until_async(lambda: _marked(marks, "stopped"), 20, "6 attempts stopped",
                           until=lambda stopped: len(stopped) >= 6)
    stopped = {int(p.name.split("-")[1]) for p in marks.glob("stopped-*")}
    assert stopped == {c.index for c in cancelled}
    for p in marks.glob("stopped-*"):
        assert float(p.read_text()) - cancelled_at < scaled(10)
    assert len(list(marks.glob("done-*"))) == 20

    # Nothing more was dispatched for it after the cancel, then or a while later.
    def all_dispatches(recs: list[ev.TaskDispatched]) -> bool:
        return sum(r.workflow_id == workflow_id for r in recs) >= len(dispatched)

    queued = await read_topic(stack.topics.tasks("cpu"), all_dispatches, scaled(60))
    assert sum(r.workflow_id == workflow_id for r in queued) == len(dispatched)
    await holds_for_async(lambda: _dispatches_now(stack, workflow_id), 0.5,
                          f"{len(dispatched)} dispatches, none after the cancel",
                          holds=lambda count: count == len(dispatched))

    # The worker's slots are free again: a short workflow runs at once.
    quick = {"name": "after-cancel", "nodes": [{"id": "a", "task": "e2e.sleep",
                                                 "input": {"seconds": 0}}]}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        after = await _submit(client, quick, "after-cancel")
    assert (await wait_status(stack, after, timeout_s=20))["status"] == "succeeded"


async def _dispatches_now(stack: Stack, workflow_id: str) -> int:
    """How many dispatches of the workflow ``tasks.cpu`` holds, read to its end now
    (dispatches are keyed by their dispatch id, ``<workflow id>/<task>/<attempt>``)."""
    prefix = f"{workflow_id}/".encode()
    async with TopicReader(BOOTSTRAP, timeout_s=scaled(60)) as reader:
        return len(await reader.read_to_end(stack.topics.tasks("cpu"),
                                            keep=lambda k: k is not None and k.startswith(prefix)))


def _marked(marks: Path, kind: str) -> list[str]:
    """The names of the marks of one ``kind`` (``started``, ``done``, ``stopped``), sorted."""
    return sorted(p.name for p in marks.glob(f"{kind}-*"))


def _nodes(status: dict[str, object]) -> dict[str, str]:
    return {n["id"]: n["status"] for n in status["nodes"]}  # type: ignore[attr-defined,index]


async def test_error_route_and_continue_on_error(stack: Stack) -> None:
    def shape(b: dict[str, object], *extra: dict[str, object]) -> dict[str, object]:
        return {"name": "routes", "nodes": [
            {"id": "a", "task": "e2e.sleep", "input": {"seconds": 0}},
            {"id": "b", "task": "e2e.fatal", "needs": ["a"], **b},
            {"id": "c", "task": "e2e.sleep", "needs": ["a"], "input": {"seconds": 0}},
            {"id": "d", "task": "e2e.flaky", "needs": ["b", "c"],
             "input": {"succeed_on": 1, "value": "${nodes.b.output}"}},
            *extra]}

    routed = shape({"on_error": "h"}, {"id": "h", "task": "e2e.flaky",
                                       "input": {"succeed_on": 1, "value": "${error}"}})
    carry_on = shape({"continue_on_error": True})
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        routed_id = await _submit(client, routed, "routed")
        carry_id = await _submit(client, carry_on, "carry-on")
    routed_status = await wait_status(stack, routed_id)
    assert routed_status["status"] == "succeeded", routed_status
    assert _nodes(routed_status) == {"a": "succeeded", "b": "failed", "c": "succeeded",
                                     "d": "skipped", "h": "succeeded"}
    handled = routed_status["output"]["h"]["value"]  # type: ignore[index]
    assert handled["node"] == "b" and handled["type"] == "NonRetryableError"
    assert "can never work" in handled["message"]

    carry_status = await wait_status(stack, carry_id)
    assert carry_status["status"] == "succeeded", carry_status
    assert _nodes(carry_status)["b"] == "failed"
    seen = carry_status["output"]["d"]["value"]  # type: ignore[index]
    assert seen["error"]["type"] == "NonRetryableError"


async def test_progress_shows_in_the_status_and_on_sse_while_running(stack: Stack) -> None:
    spec = {"name": "progress", "nodes": [{"id": "p", "task": "e2e.halfway",
                                            "input": {"seconds": 3}}]}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        workflow_id = await _submit(client, spec, "progress")
        async def view_now() -> dict[str, Any]:
            return dict((await client.get(f"/v1/workflows/{workflow_id}")).json())

        view = await wait_until_async(view_now, 20, "progress 0.5 in the status",
                                      until=lambda v: (v.get("tasks") or [{}])[0].get(
                                          "progress") == 0.5)
        tasks = view["tasks"]
        assert view["status"] == "running"
        assert tasks[0]["message"] == "halfway"
        async with aconnect_sse(client, "GET", f"/v1/workflows/{workflow_id}/events") as source:
            kinds = [sse.event async for sse in source.aiter_sse() if sse.data]
    assert kinds.index("TaskProgressed") < kinds.index("WorkflowSucceeded")


async def test_an_attempt_that_starts_after_its_cancel_is_stopped(
        stack: Stack, tmp_path: Path) -> None:
    """The queue has no worker when the cancel happens, so no worker sees the cancel; the
    worker that comes later starts the attempts and the coordinator answers their
    ``TaskStarted`` with a stop."""
    marks = tmp_path / "marks"
    marks.mkdir()
    spec = {"name": "late-start", "nodes": [
        {"id": "m", "kind": "map", "over": "${input.items}", "task": "e2e.q2_marked_sleep",
         "queue": "q2", "input": {"seconds": "${item}", "marks": str(marks)}}]}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        # No worker serves q2 yet (nor may one have lately): queued anyway.
        workflow_id = await _submit(client, spec, "late-start", {"items": [5.0] * 3},
                                    queue_anyway=True)
        await wait_status(stack, workflow_id, 30, until=("running",))
        response = await client.post(f"/v1/workflows/{workflow_id}/cancel")
        assert response.status_code == 202, response.text
    assert (await wait_status(stack, workflow_id))["status"] == "cancelled"
    q2 = localstack.default_services(TASKS, 1, "q2")[-1]
    stack.start(q2)
    try:
        try:
            await wait_until_async(lambda: _marked(marks, "stopped"), 30, "3 attempts stopped",
                                   until=lambda stopped: len(stopped) >= 3)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{stack.logs()}") from e
        # Long enough for a 5 s task that was not stopped to end.
        await holds_for_async(lambda: _marked(marks, "done"), 6, "no attempt done",
                              holds=lambda done: done == [])
        assert _marked(marks, "done") == []
    finally:
        stack.stop(q2)
        stack.services.remove(q2)  # later tests look for the stack's live services


async def test_a_workflow_whose_output_exceeds_the_record_limit_fails_as_data(
        stack: Stack) -> None:
    # 70 results of 250 kB each: every task fits, and each stays inline (under the claim
    # check's threshold, 256 KiB), but the workflow's output (17.5 MB) does not.
    spec = {"name": "too-big", "nodes": [
        {"id": "m", "kind": "map", "over": "${input.sizes}", "task": "e2e.big_output",
         "input": {"size": "${item}"}}]}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        workflow_id = await _submit(client, spec, "too-big", {"sizes": [250_000] * 70})
    status = await wait_status(stack, workflow_id, timeout_s=120)
    assert status["status"] == "failed"
    assert "exceeds the limit" in str(status["error"]), status["error"]
    records = await history(stack, workflow_id)
    assert sum(isinstance(r.body, ev.TaskSucceeded) for r in records) == 69
    assert records[-1].type == "WorkflowFailed"
    dead = await read_topic(stack.topics.dlq, lambda rs: any(
        r.key == workflow_id.encode() for r in rs), scaled(60), decode=False)
    (letter,) = [r for r in dead if r.key == workflow_id.encode()]
    assert isinstance(codec.decode(letter.value), ev.TaskSucceeded)
