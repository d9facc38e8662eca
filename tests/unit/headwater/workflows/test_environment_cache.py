"""The test environment passes the records between cached attempts and their caches as
the coordinator does (``headwater/core/kinds/cache/routing.py``): a second run of a
cached spec with the same key gets its output without running the task, a refresh runs
it again, and a code workflow's ``wf.run(..., cache_key=...)`` hits too."""

from __future__ import annotations

from typing import Any

from headwater import TaskContext, task
from headwater.core import events as ev
from headwater.core.caching import cache_id
from headwater.testing import Environment
from headwater.workflows import WorkflowContext, workflow

RAN: list[Any] = []


@task(name="envcache.embed", queue="cpu")
def embed(ctx: TaskContext, doc: str) -> dict[str, Any]:
    RAN.append(doc)
    ctx.report_units(7)
    return {"vec": [len(doc)]}


def spec() -> dict[str, Any]:
    return {"name": "envcache", "nodes": [
        {"id": "m", "kind": "map", "task": "envcache.embed", "queue": "cpu",
         "over": "${input.docs}", "input": {"doc": "${item}"},
         "cache": {"key": "${item}", "ttl": "1h"}}],
        "output": "${nodes.m.output}"}


def _cached(env: Environment, wid: str) -> list[ev.TaskCached]:
    return [e.body for e in env.history(wid) if isinstance(e.body, ev.TaskCached)]


async def test_a_second_run_hits_and_a_refresh_runs_again() -> None:
    RAN.clear()
    env = Environment()
    first = await env.run(spec(), {"docs": ["a", "bb"]}, id="r1")
    assert first == [{"vec": [1]}, {"vec": [2]}] and sorted(RAN) == ["a", "bb"]
    second = await env.run(spec(), {"docs": ["bb", "a", "ccc"]}, id="r2")
    assert second == [{"vec": [2]}, {"vec": [1]}, {"vec": [3]}]
    assert sorted(RAN) == ["a", "bb", "ccc"]  # only the new key ran
    hits = _cached(env, "r2")
    assert [(h.index, h.source["workflow_id"], h.source["index"]) for h in hits] == [
        (0, "r1", 1), (1, "r1", 0)]
    assert all(h.units == 7 for h in hits)
    assert not [e for e in env.history("r2") if isinstance(e.body, ev.TaskDispatched)
                and e.body.index in (0, 1)]
    doc = env.history(cache_id(None, "envcache.embed", "a"))
    assert any(isinstance(e.body, ev.CacheServed) and e.body.hit for e in doc)
    third = await env.run(spec(), {"docs": ["a"]}, id="r3", cache_refresh=True)
    assert third == [{"vec": [1]}] and sorted(RAN) == ["a", "a", "bb", "ccc"]
    assert not _cached(env, "r3")
    assert await env.run(spec(), {"docs": ["a"]}, id="r4") == [{"vec": [1]}]
    assert _cached(env, "r4")[0].source["workflow_id"] == "r3"  # the fresh one


@workflow(name="envcache.flow", queue="cpu")
async def flow(wf: WorkflowContext, doc: str) -> Any:
    out = await wf.run(embed, doc=doc, cache_key=f"doc:{doc}", cache_ttl="7d")
    return out["vec"][0]


async def test_a_code_step_with_a_cache_key_hits() -> None:
    RAN.clear()
    env = Environment()
    assert await env.run(flow, {"doc": "xyz"}, id="c1") == 3
    assert await env.run(flow, {"doc": "xyz"}, id="c2") == 3
    assert RAN == ["xyz"]
    assert len(_cached(env, "c2")) == 1


async def test_a_cache_without_a_key_is_keyed_by_the_attempts_input() -> None:
    RAN.clear()
    env = Environment()
    by_input = spec()
    del by_input["nodes"][0]["cache"]["key"]
    assert await env.run(by_input, {"docs": ["a", "bb"]}, id="k1") == [{"vec": [1]},
                                                                     {"vec": [2]}]
    assert await env.run(by_input, {"docs": ["bb", "x" * 5000]}, id="k2") == [
        {"vec": [2]}, {"vec": [5000]}]
    assert sorted(RAN) == ["a", "bb", "x" * 5000]  # "bb" was not run again
    [hit] = _cached(env, "k2")
    assert hit.index == 0 and hit.source["workflow_id"] == "k1"
    looked = [e.body for e in env.history("k2") if isinstance(e.body, ev.TaskLookedUp)]
    assert looked[0].key == '{"doc":"bb"}'  # the input's canonical JSON
    assert looked[1].key.startswith("sha256:") and len(looked[1].key) == 71  # a long one
