"""Schedules on the real broker, across a coordinator SIGKILL: a schedule submitted inline
(every 2 s, croniter's seconds field) starts one run per fire time (``<id>:fire.<k>:1``,
fire times distinct and consecutive); with the coordinator down ~6 s, ``catchup: all``
runs each missed fire time once and ``catchup: none`` records them ``skipped_missed``;
every fire time is recorded once whatever the crash (``ScheduleFired`` against the runs
that exist); cancelling the schedule leaves its running run going; the ``schedules``
projection counts what the history holds."""

from __future__ import annotations

import itertools
import time
import uuid
from typing import Any

import asyncpg
import httpx
from stackkit import Stack, history, read_topic
from test_kafka_submission import wait_status
from test_kinds_durable import _at, _by_seq, _coordinator, _get, _kill, _submit

from headwater.core import events as ev
from services.common.db import init_connection
from tests.polling import scaled, wait_until_async

EVERY_2S = "* * * * * */2"
DOWN_S = 6.0
"""How long the coordinator stays dead: three fire times of a 2 s schedule."""
RUN = {"name": "tick", "nodes": [
    {"id": "d", "task": "e2e.digest", "input": {"value": "${input.v}", "seconds": 1.5}}]}


def _schedule(name: str, **policy: Any) -> dict[str, Any]:
    return {"name": f"schedule:{name}", "nodes": [
        {"id": "fire", "kind": "schedule", "cron": EVERY_2S, "workflow": RUN,
         "input": {"v": 1}, "overlap": "allow", "misfire_grace": 1, **policy}]}


def _fires(records: list[ev.HistoryEvent], wid: str) -> list[ev.ScheduleFired]:
    mine = _by_seq([r for r in records if r.workflow_id == wid])
    return [r.body for r in mine if isinstance(r.body, ev.ScheduleFired)]


async def _fired_after(stack: Stack, wid: str, count: int, after_ms: int = 0,
                       timeout_s: float = 90) -> list[ev.ScheduleFired]:
    """The schedule's fire times once ``count`` of them after ``after_ms`` are recorded."""
    def enough(records: list[Any]) -> bool:
        return sum(1 for f in _fires(records, wid) if f.fire_ms > after_ms) >= count
    return _fires(await read_topic(stack.topics.events, enough, scaled(timeout_s)), wid)


def _consecutive(fires: list[ev.ScheduleFired]) -> None:
    """Each fire time once, in order, none left out (2 s apart)."""
    times = [f.fire_ms for f in fires]
    assert times == sorted(set(times)), times
    assert all(b - a == 2000 for a, b in itertools.pairwise(times)), times


async def test_fire_times_run_once_across_a_coordinator_kill(own: Stack) -> None:
    tag = uuid.uuid4().hex[:6]
    every, none = f"sched-all-{tag}", f"sched-none-{tag}"  # ids of our own: the
    # schedule:<name>:<n> form is the schedules API's (a client may not take it)
    async with httpx.AsyncClient(base_url=own.gateway, timeout=30) as client:
        await _submit(client, every, _schedule(f"all-{tag}", catchup="all"))
        await _submit(client, none, _schedule(f"none-{tag}"))
        before = await _fired_after(own, every, 2)
        await _fired_after(own, none, 2)
        coordinator = _coordinator(own)
        with _at(own):
            _kill(coordinator)
            down_at = int(time.time() * 1000)
            time.sleep(DOWN_S)  # the outage itself, not a wait for a condition
            own.start(coordinator)
        every_fires = await _fired_after(own, every, 3, down_at + 2000 * 4)
        none_fires = await _fired_after(own, none, 3, down_at + 2000 * 4)
        for wid in (every, none):
            response = await client.post(f"/v1/workflows/{wid}/cancel",
                                         json={"reason": "schedule deleted"})
            assert response.status_code == 202, response.text
    assert (await wait_status(own, every))["status"] == "cancelled"
    assert (await wait_status(own, none))["status"] == "cancelled"
    every_fires = _fires(await history(own, every), every)
    none_fires = _fires(await history(own, none), none)

    # Back: the first firing after the restart (the restart itself takes a while).
    back_at = min(f.at_ms for f in every_fires if f.at_ms > down_at)
    assert back_at - down_at >= DOWN_S * 1000

    # catchup all: every fire time, the missed ones too, ran once, each its own run.
    _consecutive(every_fires)
    assert all(f.outcome == "started" for f in every_fires), every_fires
    assert [f.run_id for f in every_fires] == [
        f"{every}:fire.{k}:1" for k in range(len(every_fires))]
    missed = [f for f in every_fires if down_at < f.fire_ms < back_at - 1000]
    assert len(missed) >= 3 and all(f.at_ms - f.fire_ms > 1000 for f in missed), missed
    assert len(before) >= 2 and every_fires[:len(before)] == before[:len(before)]
    for f in every_fires:
        assert f.run_id is not None
        run = await _get(own, f.run_id)
        assert run["status"] in ("running", "succeeded"), run  # the cancel did not reach it
    runs = _by_seq(await history(own, every_fires[-1].run_id or ""))
    assert sum(1 for r in runs if isinstance(r.body, ev.WorkflowAccepted)) == 1
    assert isinstance(runs[-1].body, ev.WorkflowSucceeded), runs[-1]

    # catchup none: the fire times missed while it was down are skipped, each once.
    _consecutive(none_fires)
    skipped = [f for f in none_fires if f.outcome == "skipped_missed"]
    # Its own first firing after the restart: the two schedules may come back apart.
    none_back_at = min(f.at_ms for f in none_fires if f.at_ms > down_at)
    gap = [f for f in none_fires if down_at + 1000 < f.fire_ms < none_back_at - 1000]
    assert len(gap) >= 2 and all(f.outcome == "skipped_missed" for f in gap), (down_at, gap)
    assert len(skipped) >= len(gap), none_fires
    started = [f for f in none_fires if f.outcome == "started"]
    assert [f.run_id for f in started] == [f"{none}:fire.{k}:1" for k in range(len(started))]

    await _projected(own, every, len(every_fires), 0)
    await _projected(own, none, len(started), len(none_fires) - len(started))


async def _projected(stack: Stack, wid: str, fired: int, skipped: int) -> None:
    """The ``schedules`` row counts the history's fire times, and shows the end."""
    conn = await asyncpg.connect(stack.dsn)
    await init_connection(conn)
    try:
        async def row() -> Any:
            found = await conn.fetchrow(
                "select name, cron, status, fired, skipped, next_fire_at, last_run_id"
                " from schedules where workflow_id = $1", wid)
            return found if found is not None and found["status"] == "cancelled" else None
        found = await wait_until_async(row, 60, f"{wid}'s schedules row")
        assert (found["fired"], found["skipped"]) == (fired, skipped), dict(found)
        assert found["name"] == wid.removeprefix("sched-") and found["cron"] == EVERY_2S
        assert found["next_fire_at"] is None
        assert found["last_run_id"] == f"{wid}:fire.{fired - 1}:1"
    finally:
        await conn.close()
