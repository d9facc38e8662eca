"""Code runs under shuffled interleavings: two workers (each with its own instances), the
lane moving between them now and then, a worker restarting, reports taking random
times, continuations left out (too large), attempts lost (the coordinator retries them
while their report is still coming, and an attempt's output differs from the last);
with gathers under a bound, sleeps, a signal, retried steps and one that fails for
good. Every decision each history holds must be what the function run afresh over
that history decides, every run must end, and without lost attempts it must end as the
run with nothing kept and every report in order does."""

from __future__ import annotations

import asyncio
import dataclasses
import heapq
import itertools
import random
from collections import OrderedDict
from typing import Any

import orjson
import pytest

from headwater import StepFailed, WorkflowContext, workflow
from headwater.core import events as ev
from headwater.core.kinds.code.continuation import is_continued
from headwater.core.kinds.code.journal import activation_dispatch, is_activation
from headwater.core.machine import step
from headwater.core.state import WorkflowState
from headwater.workflows.activation import Instance
from headwater.workflows.decorator import info_of
from headwater.workflows.instances import CACHE, activate, continued
from tests.unit.headwater.workflows.redecide import redecided

T0 = 1_700_000_000_000
pytestmark = pytest.mark.filterwarnings(
    "ignore:coroutine .* was never awaited:RuntimeWarning")
"""An instance dropped in a gather (one gone ahead, replaced by a replay) leaves the
branches it had not started yet: Python says so when it collects them."""


@workflow(name="tests.shuffled.mix")
async def mix(wf: WorkflowContext, seed: int) -> Any:
    """Branches gathered two at a time, each with a step, a sleep for some and a flaky
    step; a signal for odd seeds; a chain; then a gather of a step and a sleep."""
    done: list[int] = []

    async def branch(i: int) -> Any:
        a = await wf.run("t.a", i=i)
        if i % 3 == 0:
            await wf.sleep(0.05 * i)
        try:
            b = await wf.run("t.flaky", i=i, retry={"max_attempts": 3, "backoff_base": 0.01})
        except StepFailed as e:
            b = e.error_type
        done.append(i)
        return [a, b]

    out: list[Any] = [await wf.gather(*(branch(i) for i in range(5)), max_concurrency=3)]
    if seed % 2:
        out.append(await wf.signal("go", timeout=30))
    for j in range(3):
        out.append(await wf.run("t.b", j=j, n=len(done)))
    out.append(await wf.gather(wf.run("t.a", i=99, seen=sorted(done)), wf.sleep(0.01)))
    return out


def _output(d: ev.TaskDispatched, lossy: bool) -> Any:
    """A step's output; ``t.flaky`` fails its first attempt for odd ``i`` and every one
    for ``i == 4``. With ``lossy``, outputs name their attempt (a retried attempt's
    output differs)."""
    i = (d.input or {}).get("i", 0)
    if d.task == "t.flaky" and (i == 4 or (i % 2 and d.attempt == 1)):
        return RuntimeError("flaky")
    return {"task": d.task, "input": d.input, "attempt": d.attempt if lossy else 1}


class Shuffled:
    """One run: the coordinator (``machine.step``) and two workers, over one queue of
    timed events; ``rnd`` None: one worker, fixed latencies, nothing kept."""

    def __init__(self, seed: int, rnd: random.Random | None, lossy: bool = False) -> None:
        info = info_of(mix)
        assert info is not None
        self.info, self.rnd, self.lossy = info, rnd, lossy
        self.wid = f"wf-shuffled-{seed}"
        self.workers: list[OrderedDict[str, Instance]] = [OrderedDict(), OrderedDict()]
        self.queue: list[tuple[int, int, str, Any, int]] = []
        self.order = itertools.count()
        self.state: WorkflowState | None = None
        self.history: list[ev.HistoryEvent] = []
        self.armed: set[tuple[str, int]] = set()
        self._put(T0, "core", ev.WorkflowSubmitted(self.wid, info.spec(), {"seed": seed}, T0))
        if seed % 2:
            at = T0 + self._rand(0, 3000, 500)
            self._put(at, "core", ev.SignalSent(self.wid, "go", at, None, "go-1", {"ok": 1}))

    def _rand(self, low: int, high: int, fixed: int) -> int:
        """A random time from ``low`` to ``high`` ms in steps of 10 (so that two things
        happen in the same millisecond often), or ``fixed``."""
        return self.rnd.randint(low // 10, high // 10) * 10 if self.rnd else fixed

    def _chance(self, p: float) -> bool:
        return self.rnd is not None and self.rnd.random() < p

    def _put(self, at: int, kind: str, item: Any, worker: int = 0) -> None:
        heapq.heappush(self.queue, (at, next(self.order), kind, item, worker))

    def run(self, most: int = 5000) -> WorkflowState:
        for _ in range(most):
            self._arm_timer()
            if not self.queue:
                break
            at, _, kind, item, worker = heapq.heappop(self.queue)
            if kind == "core":
                self._apply(at, item)
                if self.state is not None and self.state.status.terminal:
                    break
            else:
                self._work(at, kind, item, worker)
        assert self.state is not None and self.state.status.terminal, "the run did not end"
        return self.state

    def _arm_timer(self) -> None:
        if self.state is None or not self.state.timers:
            return
        timer_id, timer = min(self.state.timers.items(), key=lambda t: t[1].fire_at_ms)
        if (timer_id, timer.fire_at_ms) not in self.armed and (
                not self.queue or timer.fire_at_ms <= self.queue[0][0]):
            self.armed.add((timer_id, timer.fire_at_ms))
            self._put(timer.fire_at_ms, "core", ev.TimerFired(self.wid, timer_id,
                                                              timer.fire_at_ms))

    def _apply(self, at: int, item: ev.Input) -> None:
        """The coordinator applies ``item`` at its own time ``at``."""
        result = step(self.state, dataclasses.replace(item, at_ms=at))  # its clock
        self.state = result.state
        self.history += result.events
        for d in result.dispatches:
            if is_continued(d):
                continue
            worker = 1 if self._chance(0.2) else 0  # the lane moved meanwhile
            if is_activation(d.index):
                assert self.state is not None
                payload = activation_dispatch(self.state, d).input
                self._put(at + self._rand(0, 40, 2), "act", (d, payload), worker)
            else:
                self._put(at + self._rand(0, 100, 7), "step", d, worker)

    def _work(self, at: int, kind: str, item: Any, worker: int) -> None:
        """Worker ``worker`` ends an activation or a step at ``at``; its report reaches
        the coordinator later."""
        CACHE.clear()
        CACHE.update(self.workers[worker])
        report: ev.Report
        if kind == "act":
            d, payload = item
            output = asyncio.run(activate(self.info, payload, cache=self.rnd is not None,
                                          node=d.node))
            report = ev.TaskSucceeded(d.workflow_id, d.node, d.index, d.attempt, at, output)
        else:
            d = item
            output = _output(d, self.lossy)
            where = (d.workflow_id, d.node, d.index, d.attempt, at)
            if isinstance(output, Exception):
                report = ev.TaskFailed(*where, str(output), "RuntimeError", True)
            else:
                carried = continued(d.workflow_id, d.node, d.index, output,
                                    max(d.at_ms, at - self._rand(0, 10, 0)))
                if self._chance(0.1):
                    carried = None  # left out: too large
                report = ev.TaskSucceeded(*where, orjson.loads(orjson.dumps(output)), carried)
                if self.lossy and self._chance(0.08):  # the coordinator found it lost
                    self._put(at - 1, "core", ev.TaskFailed(*where[:4], at - 1, "lost",
                                                            "HeartbeatTimeout", True))
        self.workers[worker] = OrderedDict(CACHE)
        if self._chance(0.05):
            self.workers[worker].clear()  # restarted
        self._put(at + self._rand(0, 40, 2), "core", report)


async def _every_decision_replays(run: Shuffled) -> None:
    checked = await redecided(run.history, run.info)
    assert len(checked) >= 8
    assert all(recorded == fresh for _, recorded, fresh in checked), [
        c for c in checked if c[1] != c[2]][:1]


@pytest.mark.parametrize("seed", range(24))
def test_shuffled_runs_decide_as_a_replay_and_end_as_the_plain_run(seed: int) -> None:
    plain = Shuffled(seed % 4, None).run()
    shuffled = Shuffled(seed % 4, random.Random(seed))
    state = shuffled.run()
    assert (state.status, state.output) == (plain.status, plain.output)
    asyncio.run(_every_decision_replays(shuffled))


@pytest.mark.parametrize("seed", range(24))
def test_shuffled_runs_with_lost_attempts_decide_as_a_replay(seed: int) -> None:
    shuffled = Shuffled(seed % 4, random.Random(1000 + seed), lossy=True)
    shuffled.run()
    asyncio.run(_every_decision_replays(shuffled))
