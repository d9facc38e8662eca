"""The audit tools on the real broker and database: ``headwater replay``, ``headwater
projection rebuild`` (``--check`` and for real) and ``headwater stuck``.

A private stack of its own, so that other tests' workflows (still running, or tampered
with) neither disturb the comparisons of whole tables nor count as stuck. The commands
run in this process through typer's runner (the rebuild starts its own process).
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from click.testing import Result
from stackkit import ADMIN_DSN, BOOTSTRAP, Stack
from typer.testing import CliRunner

from ops.cli import app
from ops.cli.pgread import read_rows
from ops.expected_rows import diff_rows, expected_rows
from ops.history import fold
from services.common.db import connect_pool
from services.common.kafka.client import topic_config
from services.common.settings import CommonSettings
from services.projector.writer import project
from tests.polling import WaitTimeout, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "headwater" / "core"))
from machine_harness import run
from test_machine_runs import NAMES, _scenario

TERMINAL = ("succeeded", "failed", "cancelled")
FLAKY = {"max_attempts": 3, "backoff_base": 0.1, "backoff_max": 0.2, "jitter": 0}
SPECS: dict[str, tuple[dict[str, Any], Any]] = {
    "diamond": ({"name": "audit-diamond", "nodes": [
        {"id": "a", "task": "e2e.flaky", "input": {"succeed_on": 1, "value": "a"}},
        {"id": "b", "task": "e2e.flaky", "needs": ["a"], "input": {"succeed_on": 1}},
        {"id": "c", "task": "e2e.sleep", "needs": ["a"], "input": {"seconds": 0.05}},
        {"id": "d", "task": "e2e.flaky", "needs": ["b", "c"],
         "input": {"succeed_on": 1, "value": ["${nodes.b.output}", "${nodes.c.output}"]}},
    ]}, None),
    "map": ({"name": "audit-map", "retry": FLAKY, "nodes": [
        {"id": "m", "kind": "map", "over": "${input.xs}", "max_concurrency": 2,
         "task": "e2e.flaky", "input": {"succeed_on": 2, "value": "${item}"}},
        {"id": "z", "task": "e2e.sleep", "needs": ["m"], "input": {"seconds": 0.05}},
    ]}, {"xs": [1, 2, 3]}),
    "failing": ({"name": "audit-fail", "nodes": [
        {"id": "x", "task": "e2e.fatal"},
        {"id": "after", "task": "e2e.flaky", "needs": ["x"], "input": {"succeed_on": 1}},
    ]}, None),
}
CANCELLED = {"name": "audit-cancel", "nodes": [
    {"id": "nap", "task": "e2e.sleep", "input": {"seconds": 30}},
    {"id": "later", "task": "e2e.sleep", "needs": ["nap"], "input": {"seconds": 0}}]}
EXPECTED = {"diamond": "succeeded", "map": "succeeded", "failing": "failed",
            "cancelled": "cancelled"}
KEYS = {"workflows": "workflow_id", "nodes": "workflow_id, node",
        "tasks": "workflow_id, task_key", "events": "workflow_id, seq"}
runner = CliRunner()


def submit(stack: Stack, spec: dict[str, Any], workflow_input: Any = None) -> str:
    workflow_id = f"audit-{uuid.uuid4().hex[:8]}"
    response = httpx.post(f"{stack.gateway}/v1/workflows", timeout=30,
                          json={"id": workflow_id, "workflow": spec, "input": workflow_input})
    assert response.status_code == 202, response.text
    return workflow_id


def wait(stack: Stack, workflow_id: str, until: tuple[str, ...] = TERMINAL,
         timeout_s: float = 30, running_task: bool = False) -> dict[str, Any]:
    """Poll the gateway until the workflow's status is one of ``until`` (and, with
    ``running_task``, one of its tasks runs); return its document."""
    def status() -> dict[str, Any]:
        response = httpx.get(f"{stack.gateway}/v1/workflows/{workflow_id}", timeout=10)
        if response.status_code != 200:
            return {"http_status": response.status_code, "body": response.text[:500]}
        return dict(response.json())

    def arrived(doc: dict[str, Any]) -> bool:
        return doc.get("status") in until and (not running_task or any(
            t["status"] == "running" for t in doc["tasks"]))

    what = f"{workflow_id} {'/'.join(until)}{' with a running task' if running_task else ''}"
    return wait_until(status, timeout_s, what, until=arrived)


@pytest.fixture(scope="module")
def runs(own: Stack) -> dict[str, str]:
    """A diamond, a map whose items all retry once, a failure and a cancellation."""
    ids = {name: submit(own, spec, inp) for name, (spec, inp) in SPECS.items()}
    ids["cancelled"] = submit(own, CANCELLED)
    wait(own, ids["cancelled"], ("running",), timeout_s=60, running_task=True)
    response = httpx.post(f"{own.gateway}/v1/workflows/{ids['cancelled']}/cancel",
                          json={"reason": "audit"}, timeout=30)
    assert response.status_code == 202, response.text
    for name, workflow_id in ids.items():
        assert wait(own, workflow_id)["status"] == EXPECTED[name], name
    return ids


def cli(stack: Stack, *args: str) -> Result:
    env = {"HEADWATER_KAFKA_BOOTSTRAP": BOOTSTRAP, "HEADWATER_TOPIC_PREFIX": stack.prefix,
           "HEADWATER_PG_DSN": stack.dsn, "COLUMNS": "200"}
    return runner.invoke(app, list(args), env=env)


def replay(stack: Stack, workflow_id: str) -> tuple[int, dict[str, Any]]:
    """``replay --json``, again while a store is still behind (for a few seconds, then
    the last answer, notes and all, for the caller to judge)."""
    def once() -> tuple[int, dict[str, Any]]:
        result = cli(stack, "replay", workflow_id, "--json")
        return result.exit_code, json.loads(result.stdout)

    try:
        return wait_until(once, 10, f"a replay of {workflow_id} with no store behind",
                          until=lambda answer: not answer[1]["notes"], interval_s=0.2)
    except WaitTimeout as e:
        last: tuple[int, dict[str, Any]] = e.last  # type: ignore[assignment]
        return last


def test_replay_folds_each_history_to_what_the_table_and_the_projection_hold(
        own: Stack, runs: dict[str, str]) -> None:
    for name, workflow_id in runs.items():
        code, doc = replay(own, workflow_id)
        assert code == 0, (name, doc["differences"], doc["notes"])
        assert doc["ok"] and doc["notes"] == [] and doc["fold_error"] is None
        last = len(doc["events"])
        assert [e["seq"] for e in doc["events"]] == list(range(1, last + 1))
        assert doc["state"]["status"] == EXPECTED[name] and doc["state"]["seq"] == last
        for store in ("table", "projection"):
            assert doc[store] == {"held": True, "seq": last, "compared_at": last,
                                  "behind": False, "matches": True}, (name, store)
    _, doc = replay(own, runs["map"])
    retried = {e["task"] for e in doc["events"] if e["type"] == "TaskDispatched"}
    assert {"m[0]/2", "m[1]/2", "m[2]/2"} <= retried
    shown = cli(own, "replay", runs["map"])
    assert shown.exit_code == 0
    for text in ("TimerScheduled", "retry:m[1]:2", "m[2]/2", "table: matches the history",
                 "projection: matches the history", "no differences"):
        assert text in shown.stdout


def test_replay_and_the_rebuild_check_report_a_tampered_projection_row(
        own: Stack, runs: dict[str, str]) -> None:
    workflow_id = runs["map"]
    set_status = "update tasks set status = $3 where workflow_id = $1 and task_key = $2"
    asyncio.run(_execute(own.dsn, set_status, workflow_id, "m[1]", "failed"))
    try:
        result = cli(own, "replay", workflow_id, "--json")
        assert result.exit_code == 1
        (difference,) = json.loads(result.stdout)["differences"]
        assert difference["where"] == "projection"
        assert (difference["path"], difference["expected"], difference["actual"]) == (
            "tasks[m[1]].status", "succeeded", "failed")
        shown = cli(own, "replay", workflow_id)
        assert ('difference: projection: tasks[m[1]].status: the log says "succeeded", the '
                'projection has "failed"') in shown.stdout
        check = cli(own, "projection", "rebuild", "--check")
        assert check.exit_code == 1, check.output
        assert f"differs: tasks {workflow_id}/m[1]: status: live 'failed', rebuilt " \
               "'succeeded'" in check.stdout
        assert "1 difference(s)" in check.stdout
    finally:
        asyncio.run(_execute(own.dsn, set_status, workflow_id, "m[1]", "succeeded"))


def test_a_copy_rebuilt_from_the_log_equals_the_live_tables(
        own: Stack, runs: dict[str, str]) -> None:
    result = cli(own, "projection", "rebuild", "--check", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["differences"] == [] and doc["swapped"] is False
    events = asyncio.run(_fetch(own.dsn, "select count(*) from events"))[0][0]
    assert doc["events"] >= events > 0  # duplicates in the log count twice
    assert asyncio.run(_rebuild_schemas(own.dsn)) == []


def test_a_rebuild_gives_back_the_same_tables_and_the_projector_goes_on(
        own: Stack, runs: dict[str, str]) -> None:
    before = asyncio.run(_dump(own.dsn))
    assert len(before["workflows"]) == len(runs)
    retired = "select workflow_id, status from retired_ids where workflow_id = 'gone-1'"
    asyncio.run(_fetch(own.dsn, "insert into retired_ids (workflow_id, status) values "
                                "('gone-1', 'succeeded') on conflict do nothing"))
    result = cli(own, "projection", "rebuild")
    assert result.exit_code == 0, result.output
    assert "0 row(s) changed" in result.stdout
    assert asyncio.run(_dump(own.dsn)) == before
    # the ids retention retired are no event's: the rebuild leaves them as they are
    assert [tuple(r) for r in asyncio.run(_fetch(own.dsn, retired))] == [("gone-1", "succeeded")]
    assert asyncio.run(_rebuild_schemas(own.dsn)) == []
    after = submit(own, *SPECS["diamond"])  # projected into the new tables
    assert wait(own, after)["status"] == "succeeded"
    code, doc = replay(own, after)
    assert code == 0 and doc["ok"], doc["differences"]


def test_no_workflow_is_stuck(own: Stack, runs: dict[str, str]) -> None:
    result = cli(own, "stuck", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["workflows"] >= len(runs) and doc["running"] == 0
    assert doc["stuck"] == [] and doc["unfoldable"] == [] and doc["truncated"] == []
    shown = cli(own, "stuck", "--older-than", "5")
    assert shown.exit_code == 0 and "no stuck workflows" in shown.stdout


def test_replay_of_an_unknown_workflow_exits_2(own: Stack) -> None:
    result = cli(own, "replay", "no-such-workflow")
    assert result.exit_code == 2 and "unknown workflow" in result.stdout


def test_the_projection_holds_the_rows_expected_of_every_recorded_scenario(
        services: None) -> None:
    asyncio.run(_project_scenarios())


async def _project_scenarios() -> None:
    name = f"hw_audit_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(ADMIN_DSN)
    await admin.execute(f'create database "{name}"')
    dsn = f"{ADMIN_DSN.rsplit('/', 1)[0]}/{name}"
    pool = await connect_pool(dsn)
    try:
        for scenario in NAMES:
            history = run(_scenario(scenario)).history
            expected = expected_rows(fold(history).state, history)
            for batches in ([history], [[e] for e in history]):
                await pool.execute("truncate workflows, nodes, tasks, events")
                async with pool.acquire() as conn:
                    for batch in batches:
                        await project(conn, list(batch))
                rows = await read_rows(dsn, history[0].workflow_id)
                assert diff_rows(expected, rows) == [], (scenario, len(batches))
    finally:
        await pool.close()
        await admin.execute(f'drop database "{name}" with (force)')
        await admin.close()


def test_one_batch_and_event_by_event_projection_agree_after_every_event(
        services: None) -> None:
    """What makes a rebuilt copy (large batches) comparable with the live tables (small
    batches) even while workflows run: the rows after any prefix of a history are the
    same however the prefix was batched."""
    asyncio.run(_project_prefixes(["stdlib example with a retry",
                                   "lease, deadline, checkpoint", "cancel mid-run"]))


async def _project_prefixes(scenarios: list[str]) -> None:
    names = [f"hw_audit_{uuid.uuid4().hex[:8]}" for _ in range(2)]
    admin = await asyncpg.connect(ADMIN_DSN)
    for name in names:
        await admin.execute(f'create database "{name}"')
    dsns = [f"{ADMIN_DSN.rsplit('/', 1)[0]}/{name}" for name in names]
    batched, single = [await connect_pool(dsn) for dsn in dsns]
    try:
        for scenario in scenarios:
            history = run(_scenario(scenario)).history
            for pool in (batched, single):
                await pool.execute("truncate workflows, nodes, tasks, events")
            for n, event in enumerate(history, 1):
                async with single.acquire() as conn:
                    await project(conn, [event])
                await batched.execute("truncate workflows, nodes, tasks, events")
                async with batched.acquire() as conn:
                    await project(conn, history[:n])
                one, other = await _dump(dsns[0]), await _dump(dsns[1])
                assert one == other, repr((scenario, n, history[n - 1].type, {
                    t: (set(one[t]) ^ set(other[t])) for t in KEYS if one[t] != other[t]}))
    finally:
        for pool in (batched, single):
            await pool.close()
        for name in names:
            await admin.execute(f'drop database "{name}" with (force)')
        await admin.close()


async def _execute(dsn: str, sql: str, *args: Any) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(sql, *args)
    finally:
        await conn.close()


async def _fetch(dsn: str, sql: str) -> list[tuple[Any, ...]]:
    conn = await asyncpg.connect(dsn)
    try:
        return [tuple(r) for r in await conn.fetch(sql)]
    finally:
        await conn.close()


async def _dump(dsn: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every projection table, every column, ordered by key."""
    return {table: await _fetch(dsn, f"select * from {table} order by {keys}")
            for table, keys in KEYS.items()}


async def _rebuild_schemas(dsn: str) -> list[tuple[Any, ...]]:
    return await _fetch(dsn, "select nspname from pg_namespace where nspname like 'rebuild_%'")


async def _topic_configs(names: list[str], keys: list[str]) -> dict[str, dict[str, str]]:
    """Topic -> the ``keys`` of its config, as the broker describes them."""
    settings = CommonSettings(bootstrap=BOOTSTRAP)
    return {name: {k: v for k, v in (await topic_config(settings, name)).items() if k in keys}
            for name in names}


def test_the_events_topic_keeps_the_history_for_ever(own: Stack) -> None:
    """Replays and rebuilds read the events topic from its start: the coordinator creates
    it with ``retention.ms`` -1 (the broker's default here is 168 hours)."""
    found = asyncio.run(_topic_configs([own.topics.events, own.topics.submissions],
                                       ["retention.ms"]))
    assert found == {own.topics.events: {"retention.ms": "-1"},
                     own.topics.submissions: {"retention.ms": str(168 * 3600 * 1000)}}


def test_status_prints_names_and_errors_holding_console_markup_as_they_are(own: Stack) -> None:
    """Rich markup in user data (``[/]``, ``[bold]``) is shown, not interpreted."""
    name = "odd [/] name [bold]"
    spec = {"name": name, "nodes": [
        {"id": "a", "task": "e2e.flaky", "input": {"succeed_on": 1}}]}
    workflow_id = submit(own, spec)
    assert wait(own, workflow_id)["status"] == "succeeded"
    result = cli(own, "status", workflow_id, "--gateway", own.gateway)
    assert result.exit_code == 0, result.stdout
    assert name in result.stdout, result.stdout
