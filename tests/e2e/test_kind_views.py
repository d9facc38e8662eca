"""The node kinds in the read side, on the real PostgreSQL (and the real stack): their
histories project to the same rows in one batch and event by event, rows that match the
audit's expectations after every event; ``GET /v1/workflows/{id}`` shows the waiting
node and its signal, the next wake-up, conditions, loop steps, and a child's parent and
a parent's children; ``headwater replay`` and ``headwater projection rebuild --check``
find the log and the projection in agreement (on a stack of the module's own, so that other
tests' workflows do not count)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from click.testing import Result
from stackkit import ADMIN_DSN, BOOTSTRAP, Stack, history
from test_kafka_submission import wait_status
from typer.testing import CliRunner

from headwater.core import events as ev
from headwater.core.ids import child_id
from ops.cli import app
from ops.cli.pgread import read_kind_rows
from ops.expected_rows import ProjectionRows, diff_rows, expected_rows
from ops.history import Recorded, dedupe, fold
from services.common.db import init_connection
from services.common.schema import SCHEMA
from services.gateway.runs.views import workflow_view
from services.projector.compare import compare, ident
from services.projector.writer import project
from tests.polling import wait_until_async

UNIT = Path(__file__).resolve().parents[1] / "unit"
for _where in (UNIT / "headwater" / "core", UNIT / "ops"):
    if str(_where) not in sys.path:
        sys.path.insert(0, str(_where))
import kind_histories  # noqa: E402
from machine_harness import T0, run, submit  # noqa: E402

DIGEST = "e2e.digest"


def renamed(events: list[ev.HistoryEvent], workflow_id: str) -> list[ev.HistoryEvent]:
    """The same history under another workflow id."""
    return [ev.HistoryEvent(workflow_id, e.seq,
                            dataclasses.replace(e.body, workflow_id=workflow_id))
            for e in events]


def histories() -> dict[str, list[ev.HistoryEvent]]:
    """Machine-made histories of every node kind, one workflow id each."""
    made = {f"kv-{name}": renamed(getattr(kind_histories, name)().history, f"kv-{name}")
            for name in ("waited", "sleeping", "per_item", "buffered", "timed_out", "looped")}
    made["p:c:1"] = kind_histories.child().history
    return made


@pytest.fixture
async def schemas(services: None) -> AsyncIterator[tuple[str, asyncpg.Connection]]:
    """A fresh database with the projection's tables in schemas ``batched`` and
    ``single``, and a connection to it."""
    name = f"hw_kinds_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(ADMIN_DSN)
    await admin.execute(f'create database "{name}"')
    dsn = f"{ADMIN_DSN.rsplit('/', 1)[0]}/{name}"
    conn = await asyncpg.connect(dsn)
    await init_connection(conn)
    try:
        for schema in ("batched", "single"):
            await conn.execute(f"create schema {schema}; set search_path = {schema}")
            await conn.execute(SCHEMA)
        yield dsn, conn
    finally:
        await conn.close()
        await admin.execute(f'drop database "{name}" with (force)')
        await admin.close()


async def read_rows(conn: asyncpg.Connection, schema: str, workflow_id: str) -> ProjectionRows:
    """The compared columns of one workflow's rows in ``schema``, the node kinds' too."""
    s = ident(schema)
    wf = await conn.fetchrow(f"select status, seq, output, error from {s}.workflows"
                             " where workflow_id = $1", workflow_id)
    nodes = await conn.fetch(f"select node, status, total, error from {s}.nodes"
                             " where workflow_id = $1", workflow_id)
    tasks = await conn.fetch(f"select task_key, status, attempt from {s}.tasks"
                             " where workflow_id = $1", workflow_id)
    events = await conn.fetch(f"select seq, type from {s}.events where workflow_id = $1",
                              workflow_id)
    return ProjectionRows(
        workflow=dict(wf) if wf is not None else None,
        nodes={r["node"]: {"status": r["status"], "total": r["total"], "error": r["error"]}
               for r in nodes},
        tasks={r["task_key"]: {"status": r["status"], "attempt": r["attempt"]} for r in tasks},
        events={int(r["seq"]): r["type"] for r in events},
        kinds=await read_kind_rows(conn, workflow_id, schema))


async def test_kind_histories_project_the_same_in_one_batch_and_event_by_event(
        schemas: tuple[str, asyncpg.Connection]) -> None:
    _, conn = schemas
    made = histories()
    every = sorted((e for h in made.values() for e in h), key=lambda e: (e.workflow_id, e.seq))
    await conn.execute("set search_path = batched")
    await project(conn, every)
    await conn.execute("set search_path = single")
    for workflow_id, events in made.items():
        for i, e in enumerate(events):
            await project(conn, [e])
            await project(conn, [e])  # a duplicate changes nothing
            prefix = events[:i + 1]
            want = expected_rows(fold(prefix).state, prefix)
            have = await read_rows(conn, "single", workflow_id)
            assert diff_rows(want, have) == [], (workflow_id, e.seq, e.type)
    assert await compare(conn, "batched", "single") == []
    waits = await conn.fetch("select wait_key, status from single.waits"
                             " where workflow_id = 'kv-per_item' order by wait_key")
    assert [tuple(r) for r in waits] == [("approve[0]", "signalled"), ("approve[1]", "signalled")]


async def _view(dsn: str, schema: str, workflow_id: str) -> dict[str, Any]:
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=1, init=init_connection,
                                     server_settings={"search_path": schema})
    try:
        return await workflow_view(pool, workflow_id)
    finally:
        await pool.close()


def _iso(at_ms: int) -> str:
    return datetime.fromtimestamp(at_ms / 1000, tz=UTC).isoformat()


async def test_the_view_shows_what_each_kind_is_doing(
        schemas: tuple[str, asyncpg.Connection]) -> None:
    dsn, conn = schemas
    made = histories()
    parent = renamed(run([submit(kind_histories.PARENT)]).history, "p")
    await conn.execute("set search_path = batched")
    await project(conn, sorted((e for h in [*made.values(), parent] for e in h),
                               key=lambda e: (e.workflow_id, e.seq)))
    sleeping = await _view(dsn, "batched", "kv-sleeping")
    pause = next(n for n in sleeping["nodes"] if n["id"] == "pause")
    wake_at = _iso(T0 + 5010)
    assert (pause["status"], pause["wake_at"]) == ("running", wake_at)
    assert sleeping["next_wakeup"] == {"at": wake_at, "node": "pause", "index": None,
                                       "reason": "sleep"}
    approve = next(n for n in sleeping["nodes"] if n["id"] == "approve")
    assert approve["signal"] == "approval"
    assert [(w["status"], w["signal_id"], w["fields"]) for w in approve["waits"]] == [
        ("signalled", "s1", {"ok": True})]
    assert [(s["status"], s["node"]) for s in sleeping["signals"]] == [("consumed", "approve")]

    done = await _view(dsn, "batched", "kv-waited")
    conditions = {n["id"]: n.get("condition") for n in done["nodes"]}
    assert (conditions["refund"], conditions["ship"]) == (False, True)
    assert done["waiting"] == [] and done["next_wakeup"] is None

    per_item = await _view(dsn, "batched", "kv-per_item")
    assert [(s["signal_id"], s["status"]) for s in per_item["signals"]] == [
        ("early", "consumed"), ("s0", "consumed"), ("late", "discarded")]
    assert per_item["signals"][2]["reason"] == "wait approve has already succeeded"

    loop = await _view(dsn, "batched", "kv-looped")
    agent = next(n for n in loop["nodes"] if n["id"] == "agent")
    assert agent["task"] == "t.decide" and agent["spent"] == 2.0
    assert [(s["step"], s["tool"], s["finish"], (s["tool_task"] or {}).get("status"))
            for s in agent["steps"]] == [(0, "search", False, "succeeded"),
                                          (1, None, True, None)]

    kid = await _view(dsn, "batched", "p:c:1")
    assert kid["parent"] == {"workflow_id": "p", "node": "c", "index": None, "attempt": 1,
                             "via": "workflow",
                             "links": {"self": "/v1/workflows/p",
                                       "events": "/v1/workflows/p/events"}}
    parent_doc = await _view(dsn, "batched", "p")
    assert [(c["workflow_id"], c["status"]) for c in parent_doc["children"]] == [
        ("p:c:1", "running")]


# -- on the real stack ------------------------------------------------------------------

WAIT_SPEC = {"name": "views-wait", "nodes": [
    {"id": "draft", "task": DIGEST, "input": {"value": 1}},
    {"id": "approve", "kind": "wait", "signal": "approval", "needs": ["draft"],
     "timeout": 600, "fields": {"ok": "boolean"}},
    {"id": "pause", "kind": "sleep", "duration": 1, "needs": ["approve"]},
    {"id": "ship", "task": DIGEST, "needs": ["pause"],
     "when": "${nodes.approve.output.ok} == true", "input": {"value": 2}}]}
KID_SPEC = {"name": "views-kid", "nodes": [
    {"id": "hold", "kind": "wait", "signal": "go", "fields": {"n": "integer"}}],
    "output": "${nodes.hold.output}"}
PARENT_SPEC = {"name": "views-parent", "nodes": [
    {"id": "c", "kind": "workflow", "workflow": KID_SPEC}], "output": "${nodes.c.output}"}


async def _submit(client: httpx.AsyncClient, spec: dict[str, Any], prefix: str) -> str:
    workflow_id = f"{prefix}-{uuid.uuid4().hex[:8]}"
    response = await client.post("/v1/workflows", json={"id": workflow_id, "workflow": spec})
    assert response.status_code == 202, response.text
    return workflow_id


async def _doc_until(client: httpx.AsyncClient, workflow_id: str, what: str,
                     until: Any) -> dict[str, Any]:
    async def get() -> dict[str, Any]:
        response = await client.get(f"/v1/workflows/{workflow_id}")
        return dict(response.json()) if response.status_code == 200 else {}
    doc: dict[str, Any] = await wait_until_async(get, 60, what, until=until, interval_s=0.2)
    return doc


async def _rows_match_history(stack: Stack, workflow_id: str) -> None:
    events = [r.event for r in dedupe(Recorded(e) for e in await history(stack, workflow_id))[0]]
    conn = await asyncpg.connect(stack.dsn)
    try:
        await init_connection(conn)
        rows = await read_rows(conn, "public", workflow_id)
    finally:
        await conn.close()
    assert diff_rows(expected_rows(fold(events).state, events), rows) == [], workflow_id


async def _log_and_projection_agree(stack: Stack, workflow_id: str) -> None:
    """``headwater replay`` of the workflow finds its projection as its history says,
    and ``headwater projection rebuild --check`` finds no difference (the commands run
    their own event loops: in a thread)."""
    env = {"HEADWATER_KAFKA_BOOTSTRAP": BOOTSTRAP, "HEADWATER_TOPIC_PREFIX": stack.prefix,
           "HEADWATER_PG_DSN": stack.dsn, "COLUMNS": "200"}

    def cli(*args: str) -> Result:
        return CliRunner().invoke(app, list(args), env=env)

    replayed = await asyncio.to_thread(cli, "replay", workflow_id, "--json")
    projection = json.loads(replayed.stdout)["projection"]
    assert projection["matches"] and not projection["behind"], replayed.stdout
    check = await asyncio.to_thread(cli, "projection", "rebuild", "--check", "--json")
    assert check.exit_code == 0, check.output
    assert json.loads(check.stdout)["differences"] == []


async def test_a_waiting_workflow_shows_its_wait_and_then_what_it_took(own: Stack) -> None:
    stack = own
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        wid = await _submit(client, WAIT_SPEC, "views-wait")
        doc = await _doc_until(client, wid, "waiting on approval",
                               lambda d: d.get("waiting"))
        (waiting,) = doc["waiting"]
        assert (waiting["node"], waiting["index"], waiting["signal"]) == (
            "approve", None, "approval")
        assert doc["next_wakeup"]["reason"] == "wait timeout"
        assert doc["next_wakeup"]["at"] == waiting["timeout_at"]
        response = await client.post(f"/v1/workflows/{wid}/signals/approval",
                                     json={"signal_id": f"{wid}-yes", "fields": {"ok": True}})
        assert response.status_code == 202, response.text
    doc = await wait_status(stack, wid)
    assert doc["status"] == "succeeded", doc
    nodes = {n["id"]: n for n in doc["nodes"]}
    assert [(w["status"], w["signal_id"]) for w in nodes["approve"]["waits"]] == [
        ("signalled", f"{wid}-yes")]
    assert nodes["pause"]["wake_at"] is not None and nodes["ship"]["condition"] is True
    assert [(s["signal_id"], s["status"]) for s in doc["signals"]] == [
        (f"{wid}-yes", "consumed")]
    assert doc["waiting"] == [] and doc["next_wakeup"] is None
    await _rows_match_history(stack, wid)
    await _log_and_projection_agree(stack, wid)


async def test_a_parent_and_its_child_link_to_each_other(own: Stack) -> None:
    stack = own
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        parent = await _submit(client, PARENT_SPEC, "views-parent")
        kid = child_id(parent, "c", None, 1)
        kid_doc = await _doc_until(client, kid, "the child waiting",
                                   lambda d: d.get("waiting"))
        assert kid_doc["parent"]["workflow_id"] == parent
        assert (kid_doc["parent"]["node"], kid_doc["parent"]["attempt"]) == ("c", 1)
        parent_doc = (await client.get(f"/v1/workflows/{parent}")).json()
        assert [(c["workflow_id"], c["status"]) for c in parent_doc["children"]] == [
            (kid, "running")]
        response = await client.post(f"/v1/workflows/{kid}/signals/go", json={"fields": {"n": 3}})
        assert response.status_code == 202, response.text
    done = await wait_status(stack, parent)
    assert (done["status"], done["output"]) == ("succeeded", {"n": 3}), done
    assert (await wait_status(stack, kid))["status"] == "succeeded"
    assert [(c["workflow_id"], c["status"]) for c in done["children"]] == [
        (kid, "succeeded")]
    for workflow_id in (parent, kid):
        await _rows_match_history(stack, workflow_id)
        await _log_and_projection_agree(stack, workflow_id)
