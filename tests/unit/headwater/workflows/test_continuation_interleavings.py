"""A worker's instances under the interleavings a worker meets: an activation and a
step's continuation of the same run on one worker, one after the other, while the
activation's report is still on its way (``headwater.workflows.instances``). Each case
drives the real core (``machine.step``) by hand, in the order the worker's reports reach
it, and checks that the run records what it would without the instance kept."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import orjson

from headwater import WorkflowContext, workflow
from headwater.core import events as ev
from headwater.core.ids import LEASE_TIMER, task_key, task_timer_id
from headwater.core.kinds.code.journal import activation_dispatch, activation_input
from headwater.core.machine import step
from headwater.core.state import WorkflowState
from headwater.workflows.decorator import info_of
from headwater.workflows.instances import CACHE, activate, continued

T0 = 1_700_000_000_000
WID = "wf-interleaved"


@workflow(name="tests.interleaved.mutates")
async def mutates(wf: WorkflowContext) -> Any:
    """Gives a list to a step, then changes it once another step's result came."""
    items = [0]

    async def slow() -> None:
        await wf.run("t.slow")
        items.append(1)  # after t.next was issued with the list

    async def fast() -> Any:
        await wf.run("t.fast")
        return await wf.run("t.next", items=items)

    await wf.gather(slow(), fast())
    return items


class Core:
    """One run through ``machine.step``: what each input recorded, its dispatches."""

    def __init__(self, fn: Any, input: Any = None) -> None:
        info = info_of(fn)
        assert info is not None
        self.info = info
        self.state: WorkflowState | None = None
        self.history: list[ev.HistoryEvent] = []
        self.dispatched: dict[str, ev.TaskDispatched] = {}
        self.apply(ev.WorkflowSubmitted(WID, info.spec(), input, T0))

    def apply(self, item: ev.Input) -> list[ev.TaskDispatched]:
        result = step(self.state, item)
        self.state = result.state
        self.history.extend(result.events)
        for d in result.dispatches:
            self.dispatched[d.task] = d
        return result.dispatches

    def payload(self, d: ev.TaskDispatched) -> dict[str, Any]:
        assert self.state is not None
        return activation_dispatch(self.state, d).input  # type: ignore[no-any-return]

    def ok(self, d: ev.TaskDispatched, output: Any, at: int,
           continuation: Any = None) -> list[ev.TaskDispatched]:
        """``d``'s success as the coordinator applies it (its output as JSON reads)."""
        return self.apply(ev.TaskSucceeded(d.workflow_id, d.node, d.index, d.attempt, at,
                                           orjson.loads(orjson.dumps(output)), continuation))


def test_a_decision_on_its_way_does_not_change_when_the_function_runs_on() -> None:
    """Activation 1 issues ``t.next`` with a list the function changes later; before its
    report is encoded, another step of the run ends on the same worker, whose
    continuation runs the function on (it appends to the list). The decision sent must
    be the one activation 1 reached, as a replay decides it."""
    CACHE.clear()
    core = Core(mutates)
    act0 = core.dispatched["tests.interleaved.mutates"]
    core.ok(act0, asyncio.run(activate(core.info, core.payload(act0), node="main")), T0 + 10)
    slow, fast = core.dispatched["t.slow"], core.dispatched["t.fast"]
    (act1,) = core.ok(fast, "f", T0 + 20)  # its worker kept no instance: no continuation
    decision = asyncio.run(activate(core.info, core.payload(act1), node="main"))
    sent = copy.deepcopy(decision)
    # t.slow ends here while activation 1's report waits in the worker's outbox
    carried = continued(WID, "main", slow.index, "s", T0 + 25)
    assert carried is not None and carried["act"] == 2
    assert decision == sent, "the function changed the decision after it was reached"
    core.ok(act1, decision, T0 + 30)
    core.ok(slow, "s", T0 + 40, carried)
    assert core.dispatched["t.next"].input == {"items": [0]}


@workflow(name="tests.interleaved.racing")
async def racing(wf: WorkflowContext) -> Any:
    """Two steps at once; each one's result issues a step named after it."""
    async def one(i: int) -> Any:
        value = await wf.run("t.r", i=i)
        await wf.run("t.after", i=i)
        return value

    return await wf.gather(one(0), one(1))


def test_an_instance_given_another_result_at_the_same_time_is_not_reused() -> None:
    """Worker A runs step 0 and continues the function with its result (activation 1 at
    time T), but step 1's report, from worker B, reached the coordinator first, at T
    too: activation 1 is dispatched with step 1's result, and A's continuation ignored.
    B runs activation 1. Activation 2 (step 0's result) goes back to A, whose instance
    ran an activation 1 as many results and at the same times as the history's, but
    not the same result: it must replay, not go on (it would decide nothing, where the
    function issues ``t.after`` for step 0)."""
    CACHE.clear()
    core = Core(racing)
    act0 = core.dispatched["tests.interleaved.racing"]
    first = {d.input["i"]: d for d in core.ok(
        act0, asyncio.run(activate(core.info, core.payload(act0), node="main")), T0 + 10)}
    at = T0 + 50
    carried = continued(WID, "main", first[0].index, "r0", at)  # worker A
    assert carried is not None and carried["at_ms"] == at
    a_cache = dict(CACHE)
    (act1,) = core.ok(first[1], "r1", at)  # worker B's report, first, at the same ms
    assert act1.at_ms == at and core.ok(first[0], "r0", at + 5, carried) == []
    CACHE.clear()  # worker B runs activation 1: it holds no instance
    core.ok(act1, asyncio.run(activate(core.info, core.payload(act1), node="main")), at + 10)
    act2 = core.dispatched["tests.interleaved.racing"]
    assert act2.index == 4
    CACHE.clear()
    CACHE.update(a_cache)  # activation 2 goes back to worker A
    decision = asyncio.run(activate(core.info, core.payload(act2), node="main"))
    fresh = asyncio.run(activate(core.info, core.payload(act2), cache=False))
    assert decision == fresh
    assert [s["name"] for s in decision["steps"]] == ["t.after"]


@workflow(name="tests.interleaved.lapsed")
async def lapsed(wf: WorkflowContext) -> Any:
    """Two steps at once; each one's result issues a step, then one named after it."""
    async def one(i: int) -> Any:
        value = await wf.run("t.r", i=i, heartbeat_timeout=5)
        await wf.run("t.after", i=i)
        await wf.run(f"t.done{i}")
        return value

    return await wf.gather(one(0), one(1))


def test_a_continuation_from_an_instance_given_another_result_is_ignored() -> None:
    """Worker A runs step 0, whose lease lapsed meanwhile (the coordinator retries it),
    and continues the function with its result (activation 1, at T): its report is
    discarded. Step 1's report, from worker B, came at T too: activation 1 is
    dispatched with step 1's result and B runs it (it issues ``t.after`` for step 1).
    That step ends on A, whose instance ran an activation 1 at the same time with as
    many results, but step 0's: its continuation must be ignored (it decides ``t.done0``
    where the history's function issues ``t.done1``)."""
    CACHE.clear()
    core = Core(lapsed)
    act0 = core.dispatched["tests.interleaved.lapsed"]
    first = {d.input["i"]: d for d in core.ok(
        act0, asyncio.run(activate(core.info, core.payload(act0), node="main")), T0 + 10)}
    core.apply(ev.TaskStarted(WID, "main", first[0].index, 1, T0 + 20, "worker-a"))
    lease = task_timer_id(LEASE_TIMER, task_key("main", first[0].index), 1)
    core.apply(ev.TimerFired(WID, lease, T0 + 6_000))  # step 0's attempt is lost
    assert [type(e.body).__name__ for e in core.history[-3:]] == [
        "TimerFired", "TaskFailed", "TimerScheduled"]  # retried later
    at = T0 + 6_050
    carried = continued(WID, "main", first[0].index, "r0", at)  # worker A
    assert carried is not None
    a_cache = dict(CACHE)
    (act1,) = core.ok(first[1], "r1", at)  # worker B's report, at the same ms
    assert act1.at_ms == at
    core.ok(first[0], "r0", at + 5, carried)  # discarded: a lost attempt's
    CACHE.clear()  # worker B runs activation 1
    (after,) = core.ok(act1, asyncio.run(activate(core.info, core.payload(act1),
                                                  node="main")), at + 10)
    assert after.input == {"i": 1}
    CACHE.clear()
    CACHE.update(a_cache)  # the step goes back to worker A
    carried = continued(WID, "main", after.index, "a1", at + 20)
    assert carried is not None and carried["act"] == 2 and carried["through"] == 2
    sent = core.ok(after, "a1", at + 30, carried)
    assert core.state is not None
    payload = activation_input(core.state, "main", 2)
    fresh = asyncio.run(activate(core.info, payload, cache=False))
    decided = [e.body.output for e in core.history if isinstance(e.body, ev.TaskSucceeded)
               and e.body.index == 4]
    assert decided in ([], [fresh]), (decided, fresh)
    assert [d.input for d in sent] == [{"activation": 2}]  # ignored: sent to a worker
