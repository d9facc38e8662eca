"""A code workflow's journal in the coordinator's table (``code_layout``): rebuilt exactly
after every step, and written in bytes that do not grow with the step number.

A run of a real ``@workflow`` goes through ``machine.step`` (``code_harness``: its
activations decided by the SDK over the input the coordinator builds), and after every
step its table entries are written as the store writes them (``TableStore.entries`` of
``writeset.touched_parts``). ``load_split`` must then give back ``dump_state``'s state,
and the bytes a step writes must be those of its own tasks and the header: a journal
kept whole in the header would make step k write k steps again.
"""

from __future__ import annotations

from typing import Any

from code_harness import CodeRun
from test_coordinator_redelivery import Table

from headwater import StepFailed, WorkflowContext, workflow
from headwater.core import events as ev
from headwater.core.machine import Step
from headwater.core.state import WorkflowState
from headwater.workflows.decorator import info_of
from services.coordinator.keys import DEFINITION, table_entry_key
from services.coordinator.layout import load_split
from services.coordinator.snapshot import dump_state
from services.coordinator.writeset import touched_parts

STEPS = 200
OUTPUT = "x" * 1_000  # a 1 KB task output


@workflow(name="tests.code_table.long")
async def long_run(wf: WorkflowContext, n: int) -> dict[str, Any]:
    """``n`` tasks one after another; a gather, a sleep and a signal wait on the way."""
    total = 0
    for i in range(n):
        out = await wf.run("t.step", i=i)
        total += len(out["output"])
        if i == 50:
            await wf.gather(*(wf.run("t.side", j=j) for j in range(3)))
        if i == 100:
            await wf.sleep(30)
        if i == 150:
            await wf.signal("go", timeout=600)
    return {"total": total}


@workflow(name="tests.code_table.mixed")
async def mixed(wf: WorkflowContext) -> dict[str, Any]:
    """Every kind of step, a failure caught, a signal that came before its wait and a
    signal wait that times out."""
    many = await wf.gather(*(wf.run("t.m", i=i) for i in range(4)), max_concurrency=2)
    await wf.sleep(5)
    early = await wf.signal("early")
    kid = await wf.call("tests.code_table.long", {"n": 1})
    try:
        await wf.run("t.broken", retry={"max_attempts": 2, "backoff_base": 0.1})
    except StepFailed as e:
        broken = e.error_type
    try:
        await wf.signal("never", timeout=2)
        late = ""
    except StepFailed as e:
        late = e.error_type
    return {"many": many, "early": early, "kid": kid, "broken": broken, "late": late}


class _Written:
    """The run's table, written after every step as the store writes it, checked."""

    def __init__(self) -> None:
        self.store = Table()
        self.per_step: dict[int, int] = {}
        """Steps issued when an input was applied -> the bytes written for it."""
        self.checked = 0

    def __call__(self, item: ev.Input, result: Step) -> None:
        state = result.state
        if state is None or not result.events:
            return
        entries = self.store.entries(state, touched_parts(result.events, state), {"r": 1})
        for key, value in entries:
            if value is None:
                self.store.table.data.pop(key, None)
            else:
                self.store.table.data[key] = value
        written = sum(len(k) + len(v or b"") for k, v in entries)
        issued = len((state.nodes["main"].code or {}).get("steps", ()))
        self.per_step[issued] = self.per_step.get(issued, 0) + written
        self._check(state)

    def _check(self, state: WorkflowState) -> None:
        data = self.store.table.data
        wid = state.workflow_id
        loaded = load_split(data[table_entry_key(wid)], data[table_entry_key(wid, DEFINITION)],
                            lambda key: data.get(table_entry_key(wid, key)))
        assert dump_state(loaded) == dump_state(state), f"after seq {state.seq}"
        assert loaded == state
        self.checked += 1


def _output(d: ev.TaskDispatched) -> Any:
    """A task step's output: 1 KB, whatever the step."""
    return {"output": OUTPUT, "i": (d.input or {}).get("i")}


def _echo_or_fail(d: ev.TaskDispatched) -> Any:
    """A step's name and input; ``t.broken`` fails every attempt."""
    if d.task == "t.broken":
        return RuntimeError("boom")
    return {"task": d.task, "input": d.input}


def test_a_200_step_run_is_rebuilt_after_every_step_in_bytes_that_do_not_grow() -> None:
    info = info_of(long_run)
    assert info is not None
    table = _Written()
    run = CodeRun(info, {"n": STEPS}, signals=[(60_000, "go", {"ok": 1})], outputs=_output,
                  on_step=table, cache=True)
    state = run.run()
    assert state.status.value == "succeeded", state.error
    assert state.output == {"total": STEPS * len(OUTPUT)}
    assert table.checked > 4 * STEPS
    journal = state.nodes["main"].code or {}
    assert len(journal["steps"]) == STEPS + 3 + 2  # the tasks, the gather, sleep, signal
    # the bytes written while step s was the last one issued: step 199 of the run's
    # tasks is step 204 of its journal (after the gather's 3, the sleep and the wait)
    early, late = table.per_step[9], table.per_step[STEPS - 1 + 5]
    assert late <= 1.2 * early, (early, late)
    header = table.store.table.data[table_entry_key(run.workflow_id)]
    assert len(header) < 3_000, len(header)  # counts, not the journal


def test_every_kind_of_step_is_rebuilt_after_every_step_with_and_without_replay() -> None:
    info = info_of(mixed)
    assert info is not None
    for cache in (True, False):
        table = _Written()
        run = CodeRun(info, {}, workflow_id=f"wf-mixed-{cache}",
                      signals=[(1, "early", {"came": "first"})], outputs=_echo_or_fail,
                      on_step=table, cache=cache)
        state = run.run()
        assert state.status.value == "succeeded", state.error
        assert state.output == {
            "many": [{"task": "t.m", "input": {"i": i}} for i in range(4)],
            "early": {"came": "first"}, "kid": {"task": "workflow", "input": {"n": 1}},
            "broken": "RuntimeError", "late": "TimeoutError"}
        assert table.checked >= 20
