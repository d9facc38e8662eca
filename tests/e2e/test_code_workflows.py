"""``@workflow`` functions served and run on the real stack: two workers (queues
``cf-cpu`` and ``cf-gpu``) announce ``code_flows``' workflows, the gateway registers them
as definitions (a new version only when the code version changes), and
``cf.research`` (tasks on both queues, a gather of 20, a code child, a spec child, a
sleep and a signal) runs by ``POST /v1/run/{name}`` in the sync, stream and async modes,
by its path ``POST /cf/research``, and by the Python client with the function itself.
Its run document lists every activation and step, the sleep and the signal wait
included, with their times; ``headwater status`` and ``stuck`` read it."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest
import typer
from code_flows import CPU, GPU, SPEC_CHILD, research
from httpx_sse import aconnect_sse
from stackkit import BOOTSTRAP, Stack, private_stack
from typer.testing import CliRunner

from headwater.client import AsyncClient
from ops import localstack
from ops.cli.endpoints import Endpoints
from ops.cli.stuck import read_histories, read_serving
from ops.cli.workflows import status as status_command
from ops.history import dedupe, fold
from ops.sandbox import set_home
from ops.stuck import is_stuck, pending, scan
from services.common.clock import now_ms
from tests.polling import scaled, wait_until_async

QUESTION = "why is the sky blue"
SQUARES = [i * i for i in range(20)]
APPROVAL = {"ok": True, "by": "ada"}
EXPECTED = {"loud": QUESTION.upper(), "sum": sum(SQUARES), "squares": SQUARES, "kid": 10,
            "spec_kid": 49, "approval": APPROVAL}
STEPS = 25  # shout, 20 squares, the code child, the spec child, the sleep, the signal


def worker(queue: str) -> localstack.Service:
    return localstack.Service(f"worker-{queue}-1", (
        sys.executable, "-m", "services.worker", "--queue", queue, "--tasks", "code_flows"))


@pytest.fixture(scope="module")
def code_stack(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Stack]:
    """A private stack with a worker on each of ``cf-cpu`` and ``cf-gpu``."""
    with private_stack(tmp_path_factory.mktemp("code"),
                       extra_env={"HEADWATER_ANNOUNCE_S": "0.5"}) as stack:
        for queue in (CPU, GPU):
            own_home(stack, lambda q=queue: stack.start(worker(q)))
        yield stack


def own_home(stack: Stack, act: Callable[[], object]) -> None:
    """``act`` with ``HEADWATER_HOME`` the stack's (where its pid files and logs are;
    ``private_stack`` puts the session's back while the module runs)."""
    before = os.environ.get("HEADWATER_HOME")
    set_home(str(stack.home))
    try:
        act()
    finally:
        set_home(before)


def rid(tag: str) -> str:
    return f"cf-{tag}-{uuid.uuid4().hex[:8]}"


async def definition(client: httpx.AsyncClient, name: str,
                     until: Callable[[dict[str, Any]], object] = bool) -> dict[str, Any]:
    async def probe() -> dict[str, Any]:
        r = await client.get(f"/v1/definitions/{name}")
        return dict(r.json()) if r.status_code == 200 else {}
    return await wait_until_async(probe, scaled(60), f"definition {name}", until=until)


async def signal_when_accepted(client: httpx.AsyncClient, workflow_id: str) -> None:
    """Send ``approval`` once the run exists (a signal before its wait is kept)."""
    async def send() -> int:
        r = await client.post(f"/v1/workflows/{workflow_id}/signals/approval",
                              json={"fields": APPROVAL})
        return r.status_code
    await wait_until_async(send, scaled(60), f"signal to {workflow_id}",
                           until=lambda code: code == 202)


async def with_signal(client: httpx.AsyncClient, workflow_id: str,
                      run: Awaitable[httpx.Response]) -> httpx.Response:
    answer, _ = await asyncio.gather(run, signal_when_accepted(client, workflow_id))
    return answer


async def test_code_workflows_served_and_run(code_stack: Stack) -> None:
    stack = code_stack
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=scaled(180)) as client:
        # The announcement became a definition: the code node names its code version
        # and its path; the input schema is the function's.
        try:
            found = await definition(client, "cf.research")
        except Exception as e:
            raise AssertionError(stack.logs()) from e
        main = found["workflow"]["nodes"][0]
        assert found["version"] == 1 and main["kind"] == "code", found
        assert main["path"] == "/cf/research" and len(main["code_version"]) == 16, main
        assert found["input_schema"]["required"] == ["question"], found
        assert (await definition(client, "cf.child"))["version"] == 1
        put = await client.put("/v1/definitions/cf.spec", json={"workflow": SPEC_CHILD})
        assert put.status_code == 201, put.text

        # Input checked against the schema: 422 naming the field.
        bad = await client.post("/v1/run/cf.research", json={"question": 5})
        assert bad.status_code == 422 and "input.question" in bad.text, bad.text
        missing = await client.post("/cf/research", json={"n": 3})
        assert missing.status_code == 422 and "question" in missing.text, missing.text

        body = {"question": QUESTION}
        # Sync: the answer is the ended run's document.
        sync_id = rid("sync")
        sync = await with_signal(client, sync_id, client.post(
            "/v1/run/cf.research", params={"id": sync_id, "timeout": scaled(150)}, json=body))
        assert sync.status_code == 200, sync.text
        assert sync.json()["status"] == "succeeded" and sync.json()["output"] == EXPECTED

        # Async: 202 at once, then the result.
        async_answer = await client.post("/v1/run/cf.research", json=body,
                                         headers={"Prefer": "respond-async"})
        assert async_answer.status_code == 202, async_answer.text
        async_id = async_answer.json()["id"]
        await signal_when_accepted(client, async_id)
        async with AsyncClient(stack.gateway) as hw:
            assert await hw.result(async_id, timeout=scaled(150)) == EXPECTED

        # Stream: accepted, then the run's events to its end.
        stream_id = rid("stream")
        events: list[tuple[str, Any]] = []

        async def read_stream() -> httpx.Response:
            async with aconnect_sse(client, "POST", "/v1/run/cf.research",
                                    params={"id": stream_id}, json=body) as source:
                async for sse in source.aiter_sse():
                    events.append((sse.event, json.loads(sse.data) if sse.data else None))
                    if sse.event in ("WorkflowSucceeded", "WorkflowFailed"):
                        break
                return source.response
        streamed = await with_signal(client, stream_id, read_stream())
        assert streamed.status_code == 200
        assert events[0][0] == "accepted" and events[0][1]["id"] == stream_id
        assert events[-1][0] == "WorkflowSucceeded" and events[-1][1]["output"] == EXPECTED

        # By its path, in each mode.
        path_id = rid("path")
        by_path = await with_signal(client, path_id, client.post(
            "/cf/research", params={"id": path_id, "timeout": scaled(150)}, json=body))
        assert by_path.status_code == 200 and by_path.json()["output"] == EXPECTED, by_path.text
        path_async = await client.post("/cf/research", json=body,
                                       headers={"Prefer": "respond-async"})
        assert path_async.status_code == 202, path_async.text
        await signal_when_accepted(client, path_async.json()["id"])
        path_events: list[str] = []

        async def read_path_stream() -> httpx.Response:
            async with aconnect_sse(client, "POST", "/cf/research",
                                    params={"id": rid("pstream")}, json=body) as source:
                async for sse in source.aiter_sse():
                    path_events.append(sse.event)
                    if sse.event == "accepted":
                        await signal_when_accepted(client, json.loads(sse.data)["id"])
                    if sse.event in ("WorkflowSucceeded", "WorkflowFailed"):
                        break
                return source.response
        await read_path_stream()
        assert path_events[0] == "accepted" and path_events[-1] == "WorkflowSucceeded"
        nowhere = await client.post("/cf/nowhere", json=body)
        assert nowhere.status_code == 404 and "/cf/nowhere" in nowhere.json()["detail"]
        assert (await client.get("/cf/research")).status_code == 404  # a POST only

        # The typed client, with the function itself: its output.
        async with AsyncClient(stack.gateway, timeout=scaled(180)) as hw:
            client_run = asyncio.create_task(hw.run(research, question=QUESTION, n=4))
            typed = await client_run_with_signal(client, client_run)
        assert typed == {**EXPECTED, "sum": 14, "squares": [0, 1, 4, 9]}

        await check_run_document(client, sync_id)
        await check_status_and_stuck(client, stack)
        await check_paths_and_versions(client, stack)


async def client_run_with_signal(client: httpx.AsyncClient,
                                 run: asyncio.Task[dict[str, Any]]) -> dict[str, Any]:
    """The client chose the run's id: find the running one and signal it."""
    async def waiting() -> list[str]:
        r = await client.get("/v1/workflows", params={"status": "running",
                                                      "name": "cf.research"})
        return [w["id"] for w in r.json()["items"]]
    ids = await wait_until_async(waiting, scaled(60), "the client's run")
    for workflow_id in ids:
        await signal_when_accepted(client, workflow_id)
    return await asyncio.wait_for(run, scaled(150))


async def check_run_document(client: httpx.AsyncClient, workflow_id: str) -> None:
    """Every activation (even index) and step (odd) of node main has its task, each
    with its times: the sleep and the signal wait too. An activation that a step's report
    carried (a continuation) was never started by a worker: it has its dispatch and its
    end; the first one was."""
    doc = (await client.get(f"/v1/workflows/{workflow_id}")).json()
    tasks = {t["index"]: t for t in doc["tasks"] if t["node"] == "main"}
    steps = {i: t for i, t in tasks.items() if i % 2 == 1}
    assert sorted(steps) == [2 * s + 1 for s in range(STEPS)], sorted(tasks)
    assert all(t["status"] == "succeeded" and t["dispatched_at"] and t["finished_at"]
               for t in tasks.values()), tasks
    assert all(t["started_at"] for t in steps.values()) and tasks[0]["started_at"], tasks
    sleep, wait = steps[2 * 23 + 1], steps[2 * 24 + 1]
    assert sleep["task"] == "headwater.sleep" and sleep["message"] == "sleep 0.5 s", sleep
    assert wait["task"] == "headwater.signal" and "approval" in wait["message"], wait
    assert steps[1]["task"] == "cf.shout" and steps[1]["queue"] == GPU
    assert steps[3]["task"] == "cf.square" and steps[3]["queue"] == CPU
    assert all(i % 2 == 0 for i in tasks if i not in steps)
    assert doc["definition"] == {"name": "cf.research", "version": 1}


async def check_status_and_stuck(client: httpx.AsyncClient, stack: Stack) -> None:
    """A run waiting for its signal: ``headwater status`` shows node main running, and
    ``stuck`` does not call it stuck (its signal wait is pending)."""
    waiting = await client.post("/v1/run/cf.research", json={"question": "q", "n": 1,
                                                             "nap": 0},
                                headers={"Prefer": "respond-async"})
    workflow_id = waiting.json()["id"]

    async def wait_task() -> bool:
        doc = (await client.get(f"/v1/workflows/{workflow_id}")).json()
        return any(t["task"] == "headwater.signal" and t["status"] == "running"
                   for t in doc["tasks"])
    await wait_until_async(wait_task, scaled(90), "the signal wait")
    cli = typer.Typer()
    cli.command()(status_command)
    shown = await asyncio.to_thread(CliRunner().invoke, cli, [workflow_id, "--gateway",
                                                              stack.gateway])
    assert shown.exit_code == 0 and "main" in shown.output and "running" in shown.output, \
        shown.output
    ep = Endpoints(BOOTSTRAP, stack.prefix, stack.dsn)
    histories, _ = await read_histories(ep)
    found = scan(histories, now_ms(), serving=await read_serving(ep))
    assert workflow_id not in {s.workflow_id for s in found.stuck}, found.stuck
    kept, _ = dedupe(histories[workflow_id])
    state = fold([r.event for r in kept]).state
    assert state is not None and is_stuck(state) is None
    assert any(p.startswith("signal wait main[") for p in pending(state)), pending(state)
    # A misspelt signal is kept (a code workflow declares none beforehand), with a warning
    # naming the one the run waits for (one id: sent again, it is the same signal).
    warned: list[str] = []

    async def misspelt() -> bool:
        answer = await client.post(f"/v1/workflows/{workflow_id}/signals/aproval",
                                   json={"fields": {}, "signal_id": "typo-1"})
        assert answer.status_code == 202, answer.text
        warned[:] = answer.json().get("warnings", [])
        return bool(warned)
    await wait_until_async(misspelt, scaled(30), "the warning of a misspelt signal")
    assert warned == [f"workflow {workflow_id} waits for signal 'approval', not 'aproval': "
                      "this signal is kept until a wf.signal('aproval') takes it"], warned
    await signal_when_accepted(client, workflow_id)


async def check_paths_and_versions(client: httpx.AsyncClient, stack: Stack) -> None:
    """Two definitions claiming one path: 409 naming both; a worker restarted on the
    same code makes no new version, one with another code version does."""
    other = {"name": "cf.other", "nodes": [{"id": "main", "kind": "code", "task": "cf.child",
                                            "queue": CPU, "path": "/cf/research"}]}
    put = await client.put("/v1/definitions/cf.other", json={"workflow": other})
    assert put.status_code == 201, put.text
    clash = await client.post("/cf/research", json={"question": "q"})
    assert clash.status_code == 409, clash.text
    assert clash.json()["workflows"] == ["cf.other", "cf.research"]
    assert (await client.delete("/v1/definitions/cf.other")).status_code == 204

    cpu = next(s for s in stack.services if s.name == f"worker-{CPU}-1")
    own_home(stack, lambda: stack.stop(cpu))
    own_home(stack, lambda: stack.start(cpu))
    await asyncio.sleep(scaled(5))  # it announced the same code again
    assert (await definition(client, "cf.research"))["version"] == 1
    own_home(stack, lambda: stack.stop(cpu))
    own_home(stack, lambda: stack.start(cpu, {"HEADWATER_CODE_VERSION": "release-2"}))
    found = await definition(client, "cf.research", until=lambda d: d.get("version") == 2)
    assert found["workflow"]["nodes"][0]["code_version"] == "release-2"
    assert found["workflow"]["nodes"][0]["path"] == "/cf/research"
