"""Graceful shutdown on SIGTERM, on the real broker and database: a worker finishes its
attempt and hands the dispatch it had not started to another; a gateway answers 503 on
``/ready`` while it finishes the request in flight; a coordinator finishes its batch,
commits and leaves its group, and another takes over without gaps in any history."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
from aiokafka.admin import AIOKafkaAdminClient
from httpx_sse import aconnect_sse
from stackkit import BOOTSTRAP, Stack, read_topic, submit_to_kafka
from test_kafka_submission import wait_status
from test_leases import reports_of

from headwater.core import events as ev
from ops import localstack
from ops.sandbox import free_port


async def group_size(group: str) -> int:
    """Members of the consumer group ``group`` now."""
    return len(await group_members(group))


async def group_members(group: str, stable: bool = False) -> set[str]:
    """The member ids of the consumer group ``group`` now (with ``stable``: an empty set
    unless the group is ``Stable``, no rebalance under way)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        (response,) = await admin.describe_consumer_groups([group])
        # (error, group, state, protocol type, protocol, members: (member id, ...))
        if stable and response.groups[0][2] != "Stable":
            return set()
        return {m[0] for m in response.groups[0][5]}
    finally:
        await admin.close()


async def eventually(check: Callable[[], Any], what: str, timeout_s: float) -> float:
    """Poll the async ``check()`` until it is true; return the seconds it took."""
    began = time.monotonic()
    while not await check():
        assert time.monotonic() - began < timeout_s, f"no {what} after {timeout_s} s"
        await asyncio.sleep(0.1)
    return time.monotonic() - began


async def exited(pid: int) -> bool:
    return not localstack.alive(pid)


def python(module: str, *args: str) -> tuple[str, ...]:
    return (sys.executable, "-m", module, *args)


async def test_a_stopping_worker_finishes_its_attempt_and_hands_over_the_rest(
        stack: Stack) -> None:
    workers = [localstack.Service(f"worker-drain-{i}", python(
        "services.worker", "--queue", "drain", "--tasks", "shutdown_tasks")) for i in (1, 2)]
    for worker in workers:
        stack.start(worker, {"HEADWATER_CONCURRENCY": "1", "HEADWATER_DRAIN_S": "20"})
    try:
        group = stack.topics.worker_group("drain")
        await eventually(lambda: _is(group_size(group), 2), "two drain workers", 30)
        # Two dispatches keyed alike land on one partition: its owner (one slot) starts
        # one and leaves the other queued.
        spec = {"name": "drain", "nodes": [{
            "id": "m", "kind": "map", "over": "${input.items}", "task": "e2e.drain_sleep",
            "queue": "drain", "input": {"seconds": "${item}"}}]}
        workflow_id = f"drain-{uuid.uuid4().hex[:8]}"
        async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
            response = await client.post("/v1/workflows", json={
                "id": workflow_id, "workflow": spec, "input": {"items": [3, 3]}})
            assert response.status_code == 202, response.text
        reports = await reports_of(stack, workflow_id, lambda rs: _starts(rs) != [])
        (first,) = _starts(reports)
        owner = int(first.worker.rsplit("-", 1)[1])
        (owner_service,) = [w for w in workers if localstack.read_pid(w.pid_file) == owner]
        os.kill(owner, signal.SIGTERM)
        took = await eventually(lambda: exited(owner), "exit of the stopping worker", 15)
        assert took < 6, took  # the 3 s attempt, not the 20 s window

        status = await wait_status(stack, workflow_id, timeout_s=30)
        assert status["status"] == "succeeded", status
        reports = await reports_of(stack, workflow_id, lambda rs: len(_starts(rs)) == 2)
        starts = {s.index: s for s in _starts(reports)}
        other = starts[1 - first.index]
        assert other.worker != first.worker  # the queued one ran on the other worker
        outcomes = [r for r in reports if isinstance(r, ev.TaskSucceeded | ev.TaskFailed)]
        assert sorted((type(r).__name__, r.index, r.attempt) for r in outcomes) == [
            ("TaskSucceeded", 0, 1), ("TaskSucceeded", 1, 1)]  # no WorkerStopped, no retry
        assert status["output"] == {"m": [
            {"index": i, "attempt": 1, "pid": int(starts[i].worker.rsplit("-", 1)[1])}
            for i in (0, 1)]}
        log = owner_service.log_file.read_text()
        assert "draining" in log and "1 of 1 dispatches in hand ended" in log, log
    finally:
        for worker in workers:
            stack.stop(worker)
            stack.services.remove(worker)


async def test_a_stopping_gateway_is_unready_and_finishes_what_is_in_flight(
        stack: Stack) -> None:
    port = free_port()
    gateway = localstack.Service("gateway-drain", python("services.gateway"))
    pid = stack.start(gateway, {"HEADWATER_GATEWAY_PORT": str(port)})
    url = f"http://127.0.0.1:{port}"
    try:
        await asyncio.to_thread(localstack.wait_ready, f"{url}/ready", 60, [pid])
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            followed = await _submit(client, {"name": "long", "nodes": [
                {"id": "s", "task": "e2e.sleep", "input": {"seconds": 30}}]})
            stream = asyncio.create_task(_follow(client, followed))
            slow_id = f"slow-{uuid.uuid4().hex[:8]}"
            slow = asyncio.create_task(client.post(
                "/v1/workflows", content=_slowly(slow_id, 3.0),
                headers={"content-type": "application/json"}))
            await asyncio.sleep(0.5)  # both requests are in
            os.kill(pid, signal.SIGTERM)

            async def unready() -> bool:
                return (await _fresh(url, "GET", "/ready")).status_code == 503

            assert await eventually(unready, "503 on /ready", 2) < 1
            ready = await _fresh(url, "GET", "/ready")
            assert ready.headers["content-type"] == "application/problem+json"
            assert ready.json()["detail"] == "shutting down"
            refused = await _fresh(url, "POST", "/v1/workflows",
                                   json={"workflow": {"name": "x", "nodes": []}})
            assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
            assert not stream.done()  # streams go on while requests are in flight

            response = await slow  # the request in flight is answered
            assert response.status_code == 202, response.text
            seen = await asyncio.wait_for(stream, 10)  # ended cleanly, without an error
            assert seen[0] == "WorkflowAccepted" and "WorkflowSucceeded" not in seen
            await eventually(lambda: exited(pid), "exit of the gateway", 10)
        async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
            assert (await client.get(f"/v1/workflows/{slow_id}")).status_code == 200
            await client.post(f"/v1/workflows/{followed}/cancel")
    finally:
        stack.stop(gateway)
        stack.services.remove(gateway)


async def test_a_stopping_coordinator_hands_over_at_once_and_loses_nothing(
        stack: Stack) -> None:
    first = next(s for s in stack.services if s.name == "coordinator")
    second = localstack.Service("coordinator-2", python("services.coordinator"))
    stack.start(second)
    group = stack.topics.coordinator_app_id
    try:
        await eventually(lambda: _is(group_size(group), 2), "a second coordinator", 40)
        spec = {"name": "chain", "nodes": [
            {"id": f"n{i}", "task": "e2e.digest", "input": {"value": i, "seconds": 0.1},
             **({"needs": [f"n{i - 1}"]} if i else {})} for i in range(3)]}
        ids = [f"coord-{uuid.uuid4().hex[:8]}" for _ in range(60)]
        await _produce_submissions(stack, spec, ids)
        await asyncio.sleep(1.5)  # mid-run: batches of reports and dispatches flow
        pid = localstack.read_pid(first.pid_file)
        assert pid is not None
        log_start = first.log_file.stat().st_size
        killed_ms = time.time() * 1000
        os.kill(pid, signal.SIGTERM)
        took = await eventually(lambda: exited(pid), "exit of the coordinator", 10)
        assert took < 5, took  # well under the 10 s session timeout
        # It left the group: the other has every partition now, not after 10 s.
        other_log = second.log_file.stat().st_size
        try:
            await eventually(lambda: _is(group_size(group), 1), "a one-member group", 3)
        except AssertionError as e:  # say whether the other restarted meanwhile
            tail = second.log_file.read_text(errors="replace")[other_log:]
            raise AssertionError(f"{e}; the other coordinator's log since: "
                                 f"{tail[-2000:]}") from e
        log = first.log_file.read_text(errors="replace")[log_start:]
        assert "coordinator stopping (SIGTERM)" in log and "coordinator stopped" in log, log
        assert "restarting" not in log and "exiting at once" not in log, log

        histories = await whole_histories(stack, ids, timeout_s=60)
        ended_ms = sorted(h[len(h)].body.at_ms for h in histories.values())
        assert ended_ms[-1] > killed_ms, "the batch was over before the SIGTERM"
    finally:
        stack.start(first)  # the session's coordinator again (its pid file names a dead one)
        await eventually(lambda: _at_least(group_size(group), 2), "the coordinator back", 40)
        stack.stop(second)
        stack.services.remove(second)


async def whole_histories(stack: Stack, ids: list[str],
                          timeout_s: float) -> dict[str, dict[int, Any]]:
    """Read the events topic until every workflow of ``ids`` has ended; check that each
    history is whole (seq 1..n, no seq with two bodies, one terminal event, the last, a
    success) and return them, by workflow and seq."""
    wanted = set(ids)

    def all_done(records: list[Any]) -> bool:
        return wanted <= {r.workflow_id for r in records if r.terminal}

    records = await read_topic(stack.topics.events, all_done, timeout_s=timeout_s)
    histories: dict[str, dict[int, Any]] = {w: {} for w in ids}
    for r in records:
        if r.workflow_id in wanted:
            seen = histories[r.workflow_id].setdefault(r.seq, r)
            assert seen == r, (seen, r)  # a replayed event is the same event
    for workflow_id, history in histories.items():
        assert sorted(history) == list(range(1, len(history) + 1)), workflow_id
        assert [s for s, r in history.items() if r.terminal] == [len(history)], workflow_id
        assert history[len(history)].type == "WorkflowSucceeded", workflow_id
    return histories


async def _fresh(url: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    """One request on a connection of its own (the drain closes kept-alive ones)."""
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        return await client.request(method, path, **kwargs)


async def _is(count: Any, wanted: int) -> bool:
    return bool(await count == wanted)


async def _at_least(count: Any, wanted: int) -> bool:
    return bool(await count >= wanted)


def _starts(reports: list[Any]) -> list[ev.TaskStarted]:
    return [r for r in reports if isinstance(r, ev.TaskStarted)]


async def _submit(client: httpx.AsyncClient, spec: dict[str, Any]) -> str:
    workflow_id = f"gw-{uuid.uuid4().hex[:8]}"
    response = await client.post("/v1/workflows", json={"id": workflow_id, "workflow": spec})
    assert response.status_code == 202, response.text
    return workflow_id


async def _slowly(workflow_id: str, seconds: float) -> AsyncIterator[bytes]:
    """A submission's body, its second half ``seconds`` after its first."""
    body = (b'{"id": "%s", "workflow": {"name": "slow", "nodes": '
            b'[{"id": "a", "task": "e2e.sleep", "input": {"seconds": 0}}]}}' % workflow_id.encode())
    yield body[:20]
    await asyncio.sleep(seconds)
    yield body[20:]


async def _follow(client: httpx.AsyncClient, workflow_id: str) -> list[str]:
    """The event types of the workflow's SSE stream, until the server ends it."""
    async with aconnect_sse(client, "GET", f"/v1/workflows/{workflow_id}/events",
                            timeout=httpx.Timeout(60)) as source:
        return [sse.event async for sse in source.aiter_sse() if sse.data]


async def _produce_submissions(stack: Stack, spec: dict[str, Any], ids: list[str]) -> None:
    now_ms = int(time.time() * 1000)
    await submit_to_kafka(stack, *(ev.WorkflowSubmitted(w, spec, {}, now_ms) for w in ids))


async def test_a_stopping_standalone_projector_commits_and_leaves_its_group(
        stack: Stack) -> None:
    """``python -m services.projector`` beside the coordinator's own projector: on
    SIGTERM it exits 0 within seconds and leaves the projection group at once."""
    group = stack.topics.projection_group
    before = await group_members(group)
    projector = localstack.Service("projector-2", python("services.projector"))
    stack.start(projector)
    try:
        joined: set[str] = set()

        async def joined_now() -> bool:  # and the group settled (no rebalance under way)
            joined.update(await group_members(group, stable=True) - before)
            return bool(joined)

        await eventually(joined_now, "a second projector in a stable group", 40)
        pid = localstack.read_pid(projector.pid_file)
        assert pid is not None
        os.kill(pid, signal.SIGTERM)
        took = await eventually(lambda: exited(pid), "exit of the projector", 10)
        assert took < 5, took

        async def left() -> bool:
            return not (await group_members(group)) & joined

        await eventually(left, "the group without it", 3)
        log = projector.log_file.read_text(errors="replace")
        assert "SIGTERM: stopping" in log and "Traceback" not in log, log
    finally:
        stack.stop(projector)
        stack.services.remove(projector)
