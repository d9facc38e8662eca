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
from headwater.core.kinds.code.journal import activation_dispatch
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
