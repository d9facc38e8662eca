"""A task that raises inside a helper function, on the real stack: its traceback (the
task's own source lines, task code's frames first) reaches the event stream while the run
goes on, the run document (each task and the run's ``failure``), the task endpoint with
every attempt, a node's pages of tasks, the client's ``WorkflowFailed`` and
``headwater status``; and a node's page of 10,000 tasks is read by an index scan on the
real PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from httpx_sse import aconnect_sse
from stackkit import ADMIN_DSN, Stack
from test_kafka_submission import wait_status
from typer.testing import CliRunner

from headwater import errors
from headwater.client import Client
from headwater.core import events as ev
from ops.cli import app
from services.common.db import init_connection
from services.common.schema import SCHEMA
from services.gateway.tasks import reads
from services.gateway.tasks.views import failure
from services.projector.writer import project

CORE_TESTS = str(Path(__file__).resolve().parents[1] / "unit" / "headwater" / "core")
if CORE_TESTS not in sys.path:
    sys.path.insert(0, CORE_TESTS)
from machine_harness import T0, WF, fired, ok, run, spec, started, submit, task  # noqa: E402

SPEC: dict[str, Any] = {"name": "split", "nodes": [
    {"id": "first", "task": "e2e.flaky", "input": {"succeed_on": 1, "value": "x"}},
    {"id": "m", "kind": "map", "needs": ["first"], "over": "${input.items}",
     "task": "e2e.split_fields", "input": {"value": "${item}"},
     "retry": {"max_attempts": 2, "backoff_base": 1.5}}]}
ITEMS = ["a,b", 3, "c"]
MESSAGE = "'int' object has no attribute 'split'"


def check_traceback(text: str) -> None:
    """The traceback of ``e2e.split_fields`` raising in its helper: the task's frame
    first, then the helper's, with their source lines, and the error last."""
    frames = [line for line in text.splitlines() if line.startswith("  File ")]
    assert len(frames) == 2, text
    assert frames[0].endswith("in split_fields") and "e2e_tasks.py" in frames[0], text
    assert frames[1].endswith("in _fields_of") and "e2e_tasks.py" in frames[1], text
    assert "    fields = _fields_of(value)\n" in text
    assert '    return value.split(",")' in text
    assert "services/worker" not in text and "asyncio" not in text
    assert text.endswith(f"AttributeError: {MESSAGE}\n")


async def first_failure_on_the_stream(client: httpx.AsyncClient,
                                      workflow_id: str) -> tuple[dict[str, Any], list[str]]:
    """The data of the first ``TaskFailed`` on the run's event stream, and the types of
    the events before it."""
    seen: list[str] = []
    async with aconnect_sse(client, "GET", f"/v1/workflows/{workflow_id}/events") as source:
        async for sse in source.aiter_sse():
            if sse.event == "TaskFailed":
                return json.loads(sse.data), seen
            seen.append(sse.event)
    raise AssertionError(f"no TaskFailed on the stream: {seen}")


async def test_a_tasks_traceback_reaches_every_view(stack: Stack) -> None:
    workflow_id = f"trace-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        response = await client.post("/v1/workflows", json={
            "id": workflow_id, "workflow": SPEC, "input": {"items": ITEMS}})
        assert response.status_code == 202, response.text
        streamed, before = await asyncio.wait_for(
            first_failure_on_the_stream(client, workflow_id), 60)
        assert "WorkflowFailed" not in before  # the run goes on: its retry is to come
        assert (streamed["node"], streamed["index"], streamed["attempt"]) == ("m", 1, 1)
        assert streamed["error_type"] == "AttributeError"
        check_traceback(streamed["traceback"])

        doc = await wait_status(stack, workflow_id)
        assert doc["status"] == "failed", doc
        failure = doc["failure"]
        assert {k: failure[k] for k in ("node", "index", "attempt", "error_type", "message")} \
            == {"node": "m", "index": 1, "attempt": 2, "error_type": "AttributeError",
                "message": MESSAGE}
        check_traceback(failure["traceback"])
        item = next(t for t in doc["tasks"] if t["key"] == "m[1]")
        assert (item["status"], item["error_type"]) == ("failed", "AttributeError")
        check_traceback(item["traceback"])
        node = next(n for n in doc["nodes"] if n["id"] == "m")
        assert (node["status"], node["succeeded"], node["failed"]) == ("failed", 2, 1)

        task = (await client.get(f"/v1/workflows/{workflow_id}/tasks/m/1")).json()
        assert (task["node"], task["index"], task["task"], task["status"]) == (
            "m", 1, "e2e.split_fields", "failed")
        assert task["input"] == {"value": 3} and task["output"] is None
        assert [(a["attempt"], a["status"], a["error_type"]) for a in task["attempts"]] == [
            (1, "failed", "AttributeError"), (2, "failed", "AttributeError")]
        for attempt in task["attempts"]:
            check_traceback(attempt["traceback"])
            assert attempt["worker"] and attempt["dispatched_at"] and attempt["finished_at"]
        assert task["links"]["logs"] == f"/v1/workflows/{workflow_id}/tasks/m/1/logs"
        plain = (await client.get(f"/v1/workflows/{workflow_id}/tasks/first/-")).json()
        assert (plain["index"], plain["status"], plain["output"]) == (
            None, "succeeded", {"attempt": 1, "value": "x"})
        assert [(a["attempt"], a["status"], a["traceback"]) for a in plain["attempts"]] == [
            (1, "succeeded", "")]
        missing = await client.get(f"/v1/workflows/{workflow_id}/tasks/m/9")
        assert missing.status_code == 404, missing.text

        pages = f"/v1/workflows/{workflow_id}/nodes/m/tasks"
        first = (await client.get(pages, params={"limit": 2})).json()
        assert (first["total"], [t["index"] for t in first["tasks"]], first["next"]) == (
            3, [0, 1], 1)
        rest = (await client.get(pages, params={"after": first["next"], "limit": 2})).json()
        assert ([t["index"] for t in rest["tasks"]], rest["next"]) == ([2], None)
        failed = (await client.get(pages, params={"status": "failed"})).json()
        assert (failed["total"], [t["index"] for t in failed["tasks"]]) == (1, [1])
        check_traceback(failed["tasks"][0]["traceback"])

    def result() -> errors.WorkflowFailed:
        with Client(stack.gateway) as hw, pytest.raises(errors.WorkflowFailed) as raised:
            hw.result(workflow_id, timeout=30)
        return raised.value

    raised = await asyncio.to_thread(result)
    assert raised.failure is not None
    assert (raised.failure.node, raised.failure.index, raised.failure.attempt,
            raised.failure.error_type) == ("m", 1, 2, "AttributeError")
    check_traceback(raised.failure.traceback)
    text = str(raised)  # its last lines: the helper's frame, its source line, the error
    assert text.endswith(f"\nAttributeError: {MESSAGE}") and "in _fields_of" in text
    assert '    return value.split(",")' in text

    shown = await asyncio.to_thread(CliRunner().invoke, app, [
        "status", workflow_id, "--gateway", stack.gateway], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert f"failed at m[1], attempt 2: AttributeError: {MESSAGE}" in shown.stdout
    assert "in _fields_of" in shown.stdout and '    return value.split(",")' in shown.stdout


@pytest.fixture
async def projection(services: None) -> AsyncIterator[asyncpg.Connection]:
    """A fresh database with the projection's tables, and a connection to it."""
    name = f"hw_trace_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(ADMIN_DSN)
    await admin.execute(f'create database "{name}"')
    conn = await asyncpg.connect(f"{ADMIN_DSN.rsplit('/', 1)[0]}/{name}")
    await init_connection(conn)
    try:
        await conn.execute(SCHEMA)
        yield conn
    finally:
        await conn.close()
        await admin.execute(f'drop database "{name}" with (force)')
        await admin.close()


async def test_a_page_of_a_big_maps_tasks_is_an_index_scan(
        projection: asyncpg.Connection) -> None:
    conn = projection
    rows = [(wid, f"{node}[{i}]", node, i, 1, "failed" if i % 97 == 0 else "succeeded",
             "t", "cpu", i + 10, i + 10)
            for wid in ("wf-big", "wf-other") for node in ("m", "n") for i in range(10_000)]
    await conn.copy_records_to_table(
        "tasks", records=rows, columns=["workflow_id", "task_key", "node", "idx", "attempt",
                                        "status", "task", "queue", "seq", "first_seq"])
    await conn.execute("analyze tasks")
    started = time.perf_counter()
    page = await reads.node_page(conn, "wf-big", "m", 9_000, 100, None)
    took_ms = (time.perf_counter() - started) * 1000
    assert [r["idx"] for r in page.rows] == list(range(9_001, 9_101))
    assert (page.total, page.next) == (10_000, 9_100)
    failed = await reads.node_page(conn, "wf-big", "m", None, 500, "failed")
    assert failed.total == 104 and failed.next is None
    plan = "\n".join(r[0] for r in await conn.fetch(
        "explain select * from tasks where workflow_id = $1 and node = $2 and idx > $3"
        " order by idx nulls first limit $4", "wf-big", "m", 9_000, 101))
    assert "tasks_by_node" in plan and "Sort" not in plan, plan
    print(f"a page of 100 of a 10,000-task node after index 9,000: {took_ms:.1f} ms "
          f"(count included)\n{plan}")


def failing_for_good() -> list[ev.HistoryEvent]:
    """A task that fails three times, then its run."""
    inputs: list[ev.Input] = [submit(spec(task("a", retry={"max_attempts": 3,
                                                            "backoff_base": 0.01})))]
    for n in (1, 2, 3):
        inputs += [started("a", attempt=n, at=T0 + 100 * n),
                   ev.TaskFailed(WF, "a", None, n, T0 + 100 * n + 10, "boom", "KeyError",
                                 True, f"Traceback ...\nKeyError: {n}\n")]
        if n < 3:
            inputs.append(fired(f"retry:a:{n + 1}", T0 + 100 * n + 50))
    return run(inputs).history


def an_item_that_never_ran() -> list[ev.HistoryEvent]:
    """A continue-on-error map whose item 1 has no input to run with."""
    doc = spec({"id": "m", "kind": "map", "over": "${input.items}", "task": "t.m",
                "continue_on_error": True, "input": {"x": "${item.x}"}})
    return run([submit(doc, {"items": [{"x": 1}, {"y": 2}]}), ok("m", 1, index=0)]).history


async def task_rows(conn: asyncpg.Connection) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in await conn.fetch("select * from tasks order by task_key")]


async def test_failures_project_the_same_rows_in_any_order(
        projection: asyncpg.Connection) -> None:
    conn = projection
    for history in (failing_for_good(), an_item_that_never_ran()):
        await conn.execute("truncate tasks, workflows, nodes, events")
        await project(conn, history)
        in_order = await task_rows(conn)
        await conn.execute("truncate tasks, workflows, nodes, events")
        for e in reversed(history):  # a failure before its attempt's start and dispatch
            await project(conn, [e])
        await project(conn, history)
        assert await task_rows(conn) == in_order
    failed = await conn.fetchrow("select * from tasks where task_key = 'm[1]'")
    assert (failed["status"], failed["error_type"], failed["dispatched_at"]) == (
        "failed", "InputReferenceError", None)  # counted among m's failed tasks


def a_function_that_raised() -> list[ev.HistoryEvent]:
    """A code workflow whose step 0 failed for good and whose function let the
    ``StepFailed`` out: activation 1 decided ``fail``."""
    doc = {"name": "code", "nodes": [{"id": "main", "kind": "code", "task": "wf.code",
                                      "retry": {"max_attempts": 100}}]}
    step = {"op": "task", "name": "t.chunk", "queue": "cpu", "input": {},
            "retry": {"max_attempts": 1}}
    trace = ("Traceback (most recent call last):\n  File \"flow.py\", line 9, in pipeline\n"
             "headwater.errors.StepFailed: step 0 (task t.chunk, main[1]): ZeroDivisionError: "
             "division by zero\n")
    return run([submit(doc, {}), ok("main", {"steps": [step]}, index=0, at=T0 + 10),
                ev.TaskFailed(WF, "main", 1, 1, T0 + 20, "division by zero",
                              "ZeroDivisionError", True, "Traceback ...\nZeroDivisionError\n"),
                ok("main", {"steps": [], "fail": {
                    "type": "StepFailed", "traceback": trace, "message": (
                        "step 0 (task t.chunk, main[1]): ZeroDivisionError: division by zero")}},
                   index=2, at=T0 + 30)]).history


async def test_a_code_runs_failure_is_its_functions_with_the_step_it_names(
        projection: asyncpg.Connection) -> None:
    """The run's ``failure`` is the function's exception from its failing activation's
    decision: its type, message and traceback, which name the failed step's task key
    (``headwater task RUN main 1`` shows that attempt's own traceback)."""
    history = a_function_that_raised()
    assert isinstance(history[-1].body, ev.WorkflowFailed)
    await project(projection, history)
    node, task_failed = await reads.failed_by(projection, WF)
    assert node is not None and node["node"] == "main"
    found = failure(node, task_failed)
    assert found is not None
    assert (found["node"], found["index"], found["attempt"], found["error_type"]) == (
        "main", 2, 1, "StepFailed")
    assert found["message"] == "step 0 (task t.chunk, main[1]): ZeroDivisionError: division by zero"
    assert found["traceback"].endswith("ZeroDivisionError: division by zero\n")
