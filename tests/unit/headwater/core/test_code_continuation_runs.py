"""Whole code runs through the core with continuations (a step's report carrying the
function's next decision, as a worker's does with the run's instance kept): the same
output as the run without them, fewer activations sent to workers, and every decision
the history holds is the one a fresh replay of the function over the same history
decides (``headwater.workflows.instances.continued``,
``headwater/core/kinds/code/continuation.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from code_harness import CodeRun, echo

from headwater import StepFailed, WorkflowContext, workflow
from headwater.core import events as ev
from headwater.core.kinds.code.continuation import is_continued
from headwater.core.kinds.code.journal import is_activation
from headwater.workflows.decorator import info_of
from headwater.workflows.instances import CACHE
from tests.unit.headwater.workflows.redecide import redecided


@workflow(name="tests.cont.chain")
async def chain(wf: WorkflowContext, n: int) -> dict[str, Any]:
    """``n`` tasks one after another, each output read back (a tuple the task returned
    comes back a list, as JSON gives it), and the time never going back."""
    seen, times = [], []
    for i in range(n):
        out = await wf.run("t.step", i=i)
        seen.append(isinstance(out["pair"], list))
        times.append(wf.now())
        wf.progress((i + 1) / n, f"step {i}")
    return {"seen": seen, "ordered": times == sorted(times), "r": wf.random()}


@workflow(name="tests.cont.mixed")
async def mixed(wf: WorkflowContext) -> dict[str, Any]:
    """A gather, a sleep, a signal, a child, a patch, a failure caught and a chain."""
    many = await wf.gather(*(wf.run("t.m", i=i) for i in range(4)), max_concurrency=2)
    await wf.sleep(5)
    got = await wf.signal("go", timeout=600)
    kid = await wf.call(chain, {"n": 2})
    new = wf.patched("v2")
    try:
        await wf.run("t.broken", retry={"max_attempts": 2, "backoff_base": 0.1})
        broken = ""
    except StepFailed as e:
        broken = e.error_type
    last = [await wf.run("t.after", i=i) for i in range(3)]
    return {"many": len(many), "got": got, "kid": kid is not None, "new": new,
            "broken": broken, "last": len(last), "id": str(wf.uuid())}


@workflow(name="tests.cont.again")
async def again(wf: WorkflowContext, left: int) -> int:
    """Two steps, then on again with one less until none is left."""
    await wf.run("t.a", left=left)
    await wf.run("t.b", left=left)
    if left:
        wf.continue_as_new(left=left - 1)
    return left


def _outputs(d: ev.TaskDispatched) -> Any:
    if d.task == "t.broken":
        return RuntimeError("down")
    return {**echo(d), "pair": (1, 2)}


CASES: dict[str, tuple[Callable[..., Any], Any, list[tuple[int, str, Any]]]] = {
    "chain": (chain, {"n": 12}, []),
    "mixed": (mixed, {}, [(60_000, "go", {"ok": True})]),
    "continue_as_new": (again, {"left": 3}, []),
}


def _run(name: str, continue_steps: bool) -> CodeRun:
    fn, inp, signals = CASES[name]
    CACHE.clear()
    run = CodeRun(info_of(fn), inp, workflow_id=f"wf-{name}", signals=list(signals),
                  outputs=_outputs, cache=True, continue_steps=continue_steps)
    run.run()
    return run


def _sent_activations(run: CodeRun) -> int:
    return sum(1 for e in run.history if isinstance(e.body, ev.TaskDispatched)
               and is_activation(e.body.index) and not is_continued(e.body))


def _continued(run: CodeRun) -> int:
    return sum(1 for e in run.history if isinstance(e.body, ev.TaskDispatched)
               and is_continued(e.body))


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_run_with_continuations_ends_as_the_run_without(name: str) -> None:
    plain, carried = _run(name, False), _run(name, True)
    assert plain.state is not None and carried.state is not None
    assert carried.state.status == plain.state.status
    assert carried.state.output == plain.state.output
    assert _continued(plain) == 0
    assert _continued(carried) >= 3
    assert _sent_activations(carried) + _continued(carried) == _sent_activations(plain)


def test_a_chain_in_code_needs_a_worker_only_for_its_first_activation() -> None:
    carried = _run("chain", True)
    assert _sent_activations(carried) == 1
    assert _continued(carried) == 12
    assert carried.state is not None and carried.state.output is not None
    assert carried.state.output["seen"] == [True] * 12 and carried.state.output["ordered"]
    progressed = [e.body for e in carried.history if isinstance(e.body, ev.TaskProgressed)]
    assert [p.message for p in progressed] == [f"step {i}" for i in range(12)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_recorded_decision_is_what_a_replay_decides(name: str) -> None:
    """Each activation's decision, continued or not, against the function run afresh
    from its start over the history up to that activation's dispatch."""
    carried = _run(name, True)
    info = info_of(CASES[name][0])
    assert info is not None
    own = [e for e in carried.history if e.workflow_id == f"wf-{name}"]
    checked = asyncio.run(redecided(own, info))
    assert len(checked) >= 6
    assert all(recorded == fresh for _, recorded, fresh in checked), checked
