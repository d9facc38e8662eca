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
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import httpx
from consumer_groups import wait_group, wait_group_size
from httpx_sse import aconnect_sse
from stackkit import Stack, read_topic, submit_to_kafka
from test_kafka_submission import wait_status
from test_leases import reports_of

from headwater.core import events as ev
from headwater.core.ids import dispatch_id
from headwater.topics import DEFAULT_PARTITIONS
from ops import localstack
from ops.cli.queues import wait_for_workers
from ops.sandbox import free_port
from services.common.partitioning import partition_for
from tests.polling import scaled, wait_until_async


async def eventually(check: Callable[[], Awaitable[object]], what: str,
                     timeout_s: float) -> float:
    """Wait (``tests.polling.wait_until_async``, ``timeout_s`` scaled) until the async
    ``check()`` is true; return the seconds it took."""
    began = time.monotonic()
    await wait_until_async(check, timeout_s, what)
    return time.monotonic() - began


def _same_partition_id() -> str:
    """A workflow id whose two map items' dispatches (keyed by dispatch id) land on one
    partition of the queue's topic, so that one worker holds both."""
    while True:
        wid = f"drain-{uuid.uuid4().hex[:8]}"
        a, b = (partition_for(dispatch_id(wid, "m", i, 1).encode(), DEFAULT_PARTITIONS)
                for i in (0, 1))
        if a == b:
            return wid


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
        await wait_group_size(group, 2, "two drain workers", 30)
        await asyncio.to_thread(wait_for_workers, stack.gateway, "drain", scaled(30))
        # Two dispatches keyed alike land on one partition: its owner (one slot) starts
        # one and leaves the other queued.
        spec = {"name": "drain", "nodes": [{
            "id": "m", "kind": "map", "over": "${input.items}", "task": "e2e.drain_sleep",
            "queue": "drain", "input": {"seconds": "${item}"}}]}
        workflow_id = _same_partition_id()
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
        assert took < scaled(6), took  # the 3 s attempt, not the 20 s window

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
        await asyncio.to_thread(localstack.wait_ready, f"{url}/ready", scaled(60), [pid])
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            followed = await _submit(client, {"name": "long", "nodes": [
                {"id": "s", "task": "e2e.sleep", "input": {"seconds": 30}}]})
            opened, asked = asyncio.Event(), asyncio.Event()
            stream = asyncio.create_task(_follow(client, followed, opened))
            slow_id = f"slow-{uuid.uuid4().hex[:8]}"
            slow = asyncio.create_task(_post_when_asked(url, _slow_body(slow_id), asked, 3.0))

            def both_in() -> dict[str, bool]:
                for task in (stream, slow):
                    if task.done():
                        task.result()  # raises what went wrong before the SIGTERM
                return {"stream open": opened.is_set(), "body asked for": asked.is_set()}

            await wait_until_async(both_in, 30, "both requests in",
                                   until=lambda seen: all(seen.values()))
            os.kill(pid, signal.SIGTERM)

            async def unready() -> bool:
                return (await _fresh(url, "GET", "/ready")).status_code == 503

            assert await eventually(unready, "503 on /ready", 2) < scaled(1)
            ready = await _fresh(url, "GET", "/ready")
            assert ready.headers["content-type"] == "application/problem+json"
            assert ready.json()["detail"] == "shutting down"
            refused = await _fresh(url, "POST", "/v1/workflows",
                                   json={"workflow": {"name": "x", "nodes": []}})
            assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
            assert not stream.done()  # streams go on while requests are in flight

            status, body = await slow  # the request in flight is answered
            assert status == 202, body
            seen = await asyncio.wait_for(stream, scaled(10))  # ended cleanly, without an error
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
    first_log = first.log_file.stat().st_size
    stack.start(second)
    group = stack.topics.coordinator_app_id
    try:
        # Settled with both (no rebalance under way): a member stopped while its group
        # rebalances may leave only when its session times out.
        await wait_group_size(group, 2, "a second coordinator", 40, stable=True)
        # Tasks of 0.4 s: at 0.1 s a loaded machine read the first dispatch of n1 only
        # once every run had ended, and the SIGTERM came after the batch.
        spec = {"name": "chain", "nodes": [
            {"id": f"n{i}", "task": "e2e.digest", "input": {"value": i, "seconds": 0.4},
             **({"needs": [f"n{i - 1}"]} if i else {})} for i in range(3)]}
        ids = [f"coord-{uuid.uuid4().hex[:8]}" for _ in range(60)]
        await _produce_submissions(stack, spec, ids)
        await _mid_run(stack, ids)
        await _back_from_own_restarts(first, first_log, group)
        pid = localstack.read_pid(first.pid_file)
        assert pid is not None
        log_start = first.log_file.stat().st_size
        killed_ms = time.time() * 1000
        os.kill(pid, signal.SIGTERM)
        took = await eventually(lambda: exited(pid), "exit of the coordinator", 10)
        assert took < scaled(5), took  # well under the 10 s session timeout
        # It left the group: the other has every partition now, not after 10 s.
        other_log = second.log_file.stat().st_size
        try:
            await wait_group_size(group, 1, "a one-member group", 3)
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
        await wait_group_size(group, 2, "the coordinator back", 40, at_least=True)
        stack.stop(second)
        stack.services.remove(second)


async def _back_from_own_restarts(service: localstack.Service, since: int, group: str) -> None:
    """Wait until a coordinator that restarted itself since byte ``since`` of its log
    (``restarting: input records were skipped``, which a rebalance can cause) is back in
    its group, settled with two members: a SIGTERM while the fresh image starts, before
    its handler is installed, would end it silently rather than gracefully."""
    while True:
        tail = service.log_file.read_bytes()[since:]
        if b"restarting:" not in tail:
            return
        since += len(tail)
        await wait_group_size(group, 2, f"{service.name} back after restarting itself", 40,
                              stable=True)


async def whole_histories(stack: Stack, ids: list[str],
                          timeout_s: float) -> dict[str, dict[int, Any]]:
    """Read the events topic until every workflow of ``ids`` has ended; check that each
    history is whole (seq 1..n, no seq with two bodies, one terminal event, the last, a
    success) and return them, by workflow and seq."""
    wanted = set(ids)

    def all_done(records: list[Any]) -> bool:
        return wanted <= {r.workflow_id for r in records if r.terminal}

    records = await read_topic(stack.topics.events, all_done, timeout_s=scaled(timeout_s))
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


def _starts(reports: list[Any]) -> list[ev.TaskStarted]:
    return [r for r in reports if isinstance(r, ev.TaskStarted)]


async def _submit(client: httpx.AsyncClient, spec: dict[str, Any]) -> str:
    workflow_id = f"gw-{uuid.uuid4().hex[:8]}"
    response = await client.post("/v1/workflows", json={"id": workflow_id, "workflow": spec})
    assert response.status_code == 202, response.text
    return workflow_id


def _slow_body(workflow_id: str) -> bytes:
    """A one-node submission's body."""
    return (b'{"id": "%s", "workflow": {"name": "slow", "nodes": '
            b'[{"id": "a", "task": "e2e.sleep", "input": {"seconds": 0}}]}}' % workflow_id.encode())


async def _post_when_asked(url: str, body: bytes, asked: asyncio.Event,
                           pause_s: float) -> tuple[int, str]:
    """POST ``body`` to ``/v1/workflows`` with ``Expect: 100-continue``: the headers
    first; ``asked`` is set when the server answers ``100 Continue`` (the route has begun
    reading the body: the request is in flight); the body follows ``pause_s`` later.

    Returns:
        The final status and body.
    """
    where = urlsplit(url)
    reader, writer = await asyncio.open_connection(where.hostname, where.port)
    try:
        writer.write(b"POST /v1/workflows HTTP/1.1\r\nHost: %s\r\n"
                     b"Content-Type: application/json\r\nContent-Length: %d\r\n"
                     b"Expect: 100-continue\r\n\r\n" % (where.netloc.encode(), len(body)))
        await writer.drain()
        interim = await reader.readuntil(b"\r\n\r\n")
        assert interim.startswith(b"HTTP/1.1 100 "), interim
        asked.set()
        await asyncio.sleep(pause_s)  # a slow client, not a wait
        writer.write(body)
        await writer.drain()
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        fields = dict(line.split(":", 1) for line in head.split("\r\n")[1:] if ":" in line)
        length = {k.strip().lower(): v.strip() for k, v in fields.items()}.get("content-length")
        rest = await (reader.readexactly(int(length)) if length else reader.read())
        return int(head.split(" ", 2)[1]), rest.decode(errors="replace")
    finally:
        writer.close()


async def _follow(client: httpx.AsyncClient, workflow_id: str,
                  opened: asyncio.Event) -> list[str]:
    """The event types of the workflow's SSE stream, until the server ends it; ``opened``
    is set once the stream's response has begun."""
    async with aconnect_sse(client, "GET", f"/v1/workflows/{workflow_id}/events",
                            timeout=httpx.Timeout(60)) as source:
        opened.set()
        return [sse.event async for sse in source.aiter_sse() if sse.data]


async def _mid_run(stack: Stack, ids: list[str]) -> None:
    """Wait until the workflows of ``ids`` are under way (reports and dispatches flow: one
    of them has its second node dispatched) and not all of them have ended."""
    wanted = set(ids)

    def under_way(records: list[Any]) -> bool:
        return any(r.workflow_id in wanted and isinstance(r.body, ev.TaskDispatched)
                   and r.body.node == "n1" for r in records)

    records = await read_topic(stack.topics.events, under_way, timeout_s=scaled(60))
    ended = {r.workflow_id for r in records if r.workflow_id in wanted and r.terminal}
    assert ended != wanted, "the batch was over before the SIGTERM"


async def _produce_submissions(stack: Stack, spec: dict[str, Any], ids: list[str]) -> None:
    now_ms = int(time.time() * 1000)
    await submit_to_kafka(stack, *(ev.WorkflowSubmitted(w, spec, {}, now_ms) for w in ids))


async def test_a_stopping_standalone_projector_commits_and_leaves_its_group(
        stack: Stack) -> None:
    """``python -m services.projector`` beside the coordinator's own projector: on
    SIGTERM it exits 0 within seconds and leaves the projection group at once."""
    group = stack.topics.projection_group
    # Each live coordinator's own projector, in a group settled at that size: an earlier
    # test restarted the session's coordinator, whose projector may still be joining (it
    # would count as the newcomer) or leave a member behind.
    coordinators = sum(1 for s in stack.services if s.name.startswith("coordinator")
                       and localstack.read_pid(s.pid_file) is not None)
    before = await wait_group_size(group, coordinators, "the coordinators' projectors", 40,
                                   stable=True)
    projector = localstack.Service("projector-2", python("services.projector"))
    stack.start(projector, {"HEADWATER_KAFKA_LOG_LEVEL": "info"})  # aiokafka's LeaveGroup line
    try:
        members = await wait_group(  # and the group settled (no rebalance under way)
            group, f"a second projector beside {sorted(before)}", 40,
            lambda m: before < m and len(m) == len(before) + 1, stable=True)
        joined = members - before
        pid = localstack.read_pid(projector.pid_file)
        assert pid is not None
        os.kill(pid, signal.SIGTERM)
        took = await eventually(lambda: exited(pid), "exit of the projector", 10)
        assert took < scaled(5), took

        # It said so to the broker (aiokafka logs the answer to its LeaveGroup), and the
        # broker let it go sooner than the session timeout (10 s) would have.
        log = projector.log_file.read_text(errors="replace")
        assert "SIGTERM: stopping" in log and "Traceback" not in log, log
        assert "LeaveGroup request succeeded" in log, log
        await wait_group(group, f"the group without it ({sorted(joined)})", 5,
                         lambda m: not m & joined)
    finally:
        stack.stop(projector)
        stack.services.remove(projector)
