"""``headwater replay`` of code workflows on the real broker and database.

A run of the fault suite's ``fault.code`` (``fault_flows``: tasks, a gather, a retried
task, a child workflow, a sleep, a signal kept for its wait, a task failed for good) on a
private stack: replaying it and its child from the events topic finds the coordinator's
table and the projection in agreement with their histories. And the golden history of
a code workflow (``tests/unit/headwater/core/golden/code.jsonl``), projected by the
projector's own code whole and event by event, holds the rows ``replay`` expects: its
activations' and steps' rows at their sparse indexes, none of its sleep and signal
waits (no event dispatches them), and the signal it took, consumed (it was sent without
an index; the wait that took it names its task index).
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import orjson
import pytest
from fault_flows import code
from stackkit import ADMIN_DSN, BOOTSTRAP, Stack, private_stack
from typer.testing import CliRunner

from headwater.workflows.decorator import info_of
from ops.cli import app
from ops.cli.pgread import read_rows
from ops.expected_rows import diff_rows, expected_rows
from ops.history import fold
from services.common.db import connect_pool
from services.projector.writer import project
from tests.polling import scaled, wait_until

GOLDEN = Path(__file__).resolve().parents[1] / "unit" / "headwater" / "core" / "golden"
sys.path.insert(0, str(GOLDEN.parent))
import golden_codec as gc  # noqa: E402

TERMINAL = ("succeeded", "failed", "cancelled")
runner = CliRunner()


@pytest.fixture(scope="module")
def code_stack(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Stack]:
    """A private stack whose worker serves the fault suite's code workflows."""
    with private_stack(tmp_path_factory.mktemp("code"), more_tasks=("fault_flows",)) as stack:
        yield stack


def _replay(stack: Stack, workflow_id: str) -> tuple[int, dict[str, Any]]:
    env = {"HEADWATER_KAFKA_BOOTSTRAP": BOOTSTRAP, "HEADWATER_TOPIC_PREFIX": stack.prefix,
           "HEADWATER_PG_DSN": stack.dsn, "COLUMNS": "200"}

    def once() -> tuple[int, dict[str, Any]]:
        result = runner.invoke(app, ["replay", workflow_id, "--json"], env=env)
        return result.exit_code, json.loads(result.stdout)

    return wait_until(once, scaled(30), f"a replay of {workflow_id} with no store behind",
                      until=lambda answer: not answer[1]["notes"], interval_s=0.3)


def test_replay_of_a_code_run_and_its_child_finds_no_difference(code_stack: Stack) -> None:
    info = info_of(code)
    assert info is not None
    wid = f"code-{uuid.uuid4().hex[:8]}"
    base = code_stack.gateway
    answer = httpx.post(f"{base}/v1/workflows", timeout=30,
                        json={"id": wid, "workflow": info.spec(), "input": {"seed": wid}})
    assert answer.status_code == 202, answer.text
    sent = httpx.post(f"{base}/v1/workflows/{wid}/signals/approval", timeout=30,
                      json={"fields": {"approved": True, "note": "ok"}, "signal_id": "s-1"})
    assert sent.status_code == 202, sent.text
    doc = wait_until(lambda: httpx.get(f"{base}/v1/workflows/{wid}", timeout=30).json(),
                     scaled(60), f"{wid} ended", until=lambda d: d.get("status") in TERMINAL)
    assert doc["status"] == "succeeded", doc
    assert doc["output"]["caught"] == "NonRetryableError"
    assert doc["output"]["approval"] == {"approved": True, "note": "ok"}
    code_, report = _replay(code_stack, wid)
    assert (code_, report["differences"]) == (0, []), report["differences"]
    assert report["table"]["matches"] and report["projection"]["matches"], report
    types = {e["type"] for e in report["events"]}
    assert {"SignalConsumed", "TimerFired", "TaskFailed"} <= types
    steps = report["state"]["nodes"]["main"]["code"]["steps"]
    assert [s["op"] for s in steps].count("sleep") == 1
    kid = next(i for i, s in enumerate(steps) if s["op"] == "child")
    task = report["state"]["tasks"][f"main[{2 * kid + 1}]"]
    code_, child = _replay(code_stack, f"{wid}:main.{2 * kid + 1}:{task['attempt']}")
    assert (code_, child["differences"]) == (0, []), child["differences"]
    assert child["state"]["status"] == "succeeded"


def test_the_projection_of_a_code_history_holds_the_rows_replay_expects(
        services: None) -> None:
    asyncio.run(_project_golden())


async def _project_golden() -> None:
    lines = [orjson.loads(line) for line in (GOLDEN / "code.jsonl").read_bytes().splitlines()]
    history = [gc.load_event(d) for line in lines[:-1] for d in line["decisions"]]
    expected = expected_rows(fold(history).state, history)
    # The child's row, and the sleep's and the waits' rows at their decision's numbers.
    assert {i: expected.tasks[f"main[{i}]"]["status"] for i in (9, 11, 13, 17)} == {
        9: "succeeded", 11: "succeeded", 13: "succeeded", 17: "failed"}
    assert expected.kinds is not None
    assert [s["status"] for s in expected.kinds.signals.values()] == ["consumed"]
    name = f"hw_code_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(ADMIN_DSN)
    await admin.execute(f'create database "{name}"')
    dsn = f"{ADMIN_DSN.rsplit('/', 1)[0]}/{name}"
    pool = await connect_pool(dsn)
    try:
        for batches in ([history], [[e] for e in history]):
            await pool.execute("truncate workflows, nodes, tasks, events, signals")
            async with pool.acquire() as conn:
                for batch in batches:
                    await project(conn, list(batch))
            rows = await read_rows(dsn, history[0].workflow_id)
            assert rows.kinds is not None
            assert diff_rows(expected, rows) == [], len(batches)
    finally:
        await pool.close()
        await admin.execute(f'drop database "{name}" with (force)')
        await admin.close()
