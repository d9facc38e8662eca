"""Task result caching on the real broker (docs/architecture.md §4o), on a stack of the
module's own whose worker imports ``cache_tasks``:

- run A computes its cached task (the task marks each real execution in a file); run B
  with the same key gets a hit: no execution, no dispatch in its history nor on the
  queue's topic, and its document names A's run and attempt as the source; run C,
  submitted with ``?cache=refresh``, executes again;
- 5 concurrent runs of a fresh key execute the task once (single flight);
- a code workflow's ``wf.run(..., cache_key=...)`` hits on its second run;
- the coordinator's metrics count the hits and misses by task, and the seconds and
  units the hits saved.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cache_tasks import flow
from stackkit import BOOTSTRAP, Stack, private_stack, read_topic
from test_kafka_submission import wait_status
from test_metrics import scrape, value

from headwater import codec
from headwater.core import events as ev
from headwater.workflows.decorator import info_of
from services.common.topic_reader import TopicReader

TASK = "cache.embed"
FIGURES: dict[str, Any] = {}


@pytest.fixture(scope="module")
def cache_stack(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Stack]:
    """A private stack whose worker imports ``cache_tasks``."""
    with private_stack(tmp_path_factory.mktemp("cache"), more_tasks=("cache_tasks",)) as stack:
        yield stack


def spec() -> dict[str, Any]:
    return {"name": "cached", "nodes": [
        {"id": "embed", "task": TASK, "queue": "cpu",
         "input": {"doc": "${input.doc}", "marks": "${input.marks}"},
         "cache": {"key": "${input.doc}", "ttl": "1h"}}],
        "output": "${nodes.embed.output}"}


async def _submit(client: httpx.AsyncClient, wid: str, doc: dict[str, Any],
                  inp: dict[str, Any], refresh: bool = False) -> None:
    r = await client.post("/v1/workflows" + ("?cache=refresh" if refresh else ""),
                          json={"id": wid, "workflow": doc, "input": inp})
    assert r.status_code == 202, r.text


def _runs(marks: Path) -> list[str]:
    return marks.read_text().split() if marks.exists() else []


async def _history(stack: Stack, wid: str) -> list[ev.HistoryEvent]:
    records = await read_topic(stack.topics.events, lambda rs: any(
        r.workflow_id == wid and r.terminal for r in rs), 60)
    return [r for r in records if r.workflow_id == wid]


async def _dispatched_on_queue(stack: Stack, wid: str) -> int:
    """Records on the cpu queue's topic for ``wid``'s dispatches (read to its end)."""
    async with TopicReader(BOOTSTRAP) as reader:
        records = [codec.decode(r.value)
                   for r in await reader.read_to_end(stack.topics.tasks("cpu"))]
    return sum(1 for r in records if r.workflow_id == wid)


def _coordinator_metrics(stack: Stack) -> str:
    record = json.loads((Path(stack.home) / "run" / "coordinator.launch.json").read_text())
    return f"http://127.0.0.1:{record['metrics_port']}/metrics"


async def test_a_hit_skips_the_dispatch_and_a_refresh_runs_again(
        cache_stack: Stack, tmp_path: Path) -> None:
    stack, marks = cache_stack, tmp_path / "marks"
    tag = f"k{int(time.time() * 1000) % 10**8}"
    inp = {"doc": f"doc-{tag}", "marks": str(marks)}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await _submit(client, f"a-{tag}", spec(), inp)
        a = await wait_status(stack, f"a-{tag}")
        assert a["status"] == "succeeded" and _runs(marks) == [inp["doc"]]
        began = time.perf_counter()
        await _submit(client, f"b-{tag}", spec(), inp)
        b = await wait_status(stack, f"b-{tag}")
        FIGURES["hit_run_s"] = round(time.perf_counter() - began, 3)
        assert b["status"] == "succeeded" and b["output"] == a["output"]
        assert _runs(marks) == [inp["doc"]]  # not executed again
        (task,) = b["tasks"]
        assert task["status"] == "succeeded" and task["message"] == "cached"
        assert (b["nodes"][0]["succeeded"], b["nodes"][0]["cached"]) == (1, 1), b["nodes"]
        assert a["nodes"][0]["cached"] == 0 and a["nodes"][0]["held"] == 0, a["nodes"]
        assert task["cached"]["run"] == f"a-{tag}" and task["cached"]["node"] == "embed"
        assert task["cached"]["attempt"] == 1 and task["cached"]["units"] == 40
        assert task["cached"]["saved_ms"] >= 300
        one = (await client.get(f"/v1/workflows/b-{tag}/tasks/embed/-")).json()
        assert one["output"] == a["output"] and one["status"] == "succeeded", one
        [attempt] = one["attempts"]
        assert attempt["dispatched_at"] is None and attempt["cached"] == {
            "workflow_id": f"a-{tag}", "node": "embed", "index": None, "attempt": 1}
        history = await _history(stack, f"b-{tag}")
        kinds = [type(e.body).__name__ for e in history]
        assert "TaskCached" in kinds and "TaskDispatched" not in kinds, kinds
        assert await _dispatched_on_queue(stack, f"b-{tag}") == 0
        assert await _dispatched_on_queue(stack, f"a-{tag}") == 1
        await _submit(client, f"c-{tag}", spec(), inp, refresh=True)
        c = await wait_status(stack, f"c-{tag}")
        assert c["status"] == "succeeded" and _runs(marks) == [inp["doc"]] * 2
        assert "cached" not in c["tasks"][0]
        assert c["output"]["at"] > a["output"]["at"]  # computed afresh
        await _submit(client, f"d-{tag}", spec(), inp)
        d = await wait_status(stack, f"d-{tag}")
        assert d["tasks"][0]["cached"]["run"] == f"c-{tag}"  # the refresh stored its own
        assert _runs(marks) == [inp["doc"]] * 2


async def test_concurrent_runs_of_a_fresh_key_execute_once(
        cache_stack: Stack, tmp_path: Path) -> None:
    stack, marks = cache_stack, tmp_path / "marks"
    tag = f"s{int(time.time() * 1000) % 10**8}"
    inp = {"doc": f"doc-{tag}", "marks": str(marks)}
    ids = [f"sf-{tag}-{i}" for i in range(5)]
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await asyncio.gather(*(_submit(client, wid, spec(), inp) for wid in ids))
        views = [await wait_status(stack, wid) for wid in ids]
    assert [v["status"] for v in views] == ["succeeded"] * 5
    assert _runs(marks) == [inp["doc"]]  # single flight: one execution
    sources = {v["tasks"][0].get("cached", {}).get("run") for v in views}
    computed = [v["id"] for v in views if "cached" not in v["tasks"][0]]
    assert len(computed) == 1 and sources == {None, computed[0]}
    assert len({json.dumps(v["output"], sort_keys=True) for v in views}) == 1


async def test_a_code_step_with_a_cache_key_hits(cache_stack: Stack, tmp_path: Path) -> None:
    stack, marks = cache_stack, tmp_path / "marks"
    tag = f"w{int(time.time() * 1000) % 10**8}"
    inp = {"doc": f"doc-{tag}", "marks": str(marks)}
    doc = info_of(flow).spec()
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        for i in range(2):
            r = await client.post("/v1/workflows", json={"id": f"cw-{tag}-{i}", "workflow": doc,
                                                         "input": inp, "queue_anyway": True})
            assert r.status_code == 202, r.text
            v = await wait_status(stack, f"cw-{tag}-{i}")
            assert v["status"] == "succeeded", v
    assert _runs(marks) == [inp["doc"]]
    history = await _history(stack, f"cw-{tag}-1")
    cached = [e.body for e in history if isinstance(e.body, ev.TaskCached)]
    assert len(cached) == 1 and cached[0].source["workflow_id"] == f"cw-{tag}-0"


async def test_the_metrics_count_hits_and_the_cost_saved(cache_stack: Stack) -> None:
    samples = await scrape(_coordinator_metrics(cache_stack))
    hits = value(samples, "headwater_cache_hits_total", task=TASK)
    misses = value(samples, "headwater_cache_misses_total", task=TASK)
    saved_s = value(samples, "headwater_cache_saved_seconds_total", task=TASK)
    units = value(samples, "headwater_cache_saved_units_total", task=TASK)
    FIGURES.update(hits=hits, misses=misses, saved_s=round(saved_s, 3), saved_units=units)
    print("cache figures:", FIGURES)
    # runs B, D, four of the five concurrent ones, and the code workflow's second
    assert hits == 7, FIGURES
    assert misses == 4, FIGURES  # A, C (refresh), the concurrent computer, the code's first
    # The time saved is the source attempt's as the coordinator saw it (its TaskStarted
    # to its TaskSucceeded, both stamped when applied): under load the start's report
    # may be applied late, so each hit saves some of the task's 0.3 s, not all of it.
    assert saved_s > 0 and units == 7 * 40, FIGURES
