"""Record the golden histories: ``python tests/unit/headwater/core/golden_record.py``.

Each scenario drives the state machine as a coordinator and its workers would: the
submission, then every input a dispatch, a timer or a worker's script gives rise to, in
time order. Every input is written with the decisions ``step`` took for it (the history
events it recorded), and the last line holds the final state. The files were recorded
from the machine of commit 4cb74d7 and are the reference from then on: a change to the
machine that folds one of them differently fails ``test_golden_histories``. Record
again only for a deliberate change of behaviour, and say so in the commit; with
``GOLDEN_OUT=DIR`` the files go to DIR instead (to compare a machine with the recording).

Line format (JSON): ``{"input": RECORD, "decisions": [EVENT, ...]}`` per input, then
``{"final": STATE}``. ``RECORD`` is ``{"type": class name, "fields": {...}}``; ``EVENT``
adds ``"seq"``. ``STATE`` is ``golden.state_doc`` of the final state.
"""

from __future__ import annotations

import heapq
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# This checkout's machine, whatever the virtualenv installed (a second worktree).
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

import golden_codec as gc
import orjson

from headwater.core.ids import child_id, parse_node_timer_id
from headwater.core.kinds.schedule.cron import is_schedule_timer

HERE = Path(__file__).parent / "golden"
OUT = Path(os.environ.get("GOLDEN_OUT", HERE))
T0 = 1_700_000_000_000
Script = Callable[[Any], list[tuple[int, Any]]]
"""Given a ``TaskDispatched``, the reports its worker sends: ``(ms after dispatch, input)``."""


ev = gc.events()


def _reports(d: Any, *, fail: bool = False, output: Any = None, retryable: bool = True,
            progress: bool = True, start: int = 5, end: int = 40) -> list[tuple[int, Any]]:
    key = (d.workflow_id, d.node, d.index, d.attempt)
    out: list[tuple[int, Any]] = [(start, ev.TaskStarted(*key, d.at_ms + start, "w-1"))]
    if progress:
        out.append((start + 5, ev.TaskProgressed(*key, d.at_ms + start + 5, 0.5, "half")))
    if fail:
        out.append((end, ev.TaskFailed(*key, d.at_ms + end, "boom", "RuntimeError",
                                       retryable)))
    else:
        out.append((end, ev.TaskSucceeded(*key, d.at_ms + end, output)))
    return out

def _echo(d: Any) -> list[tuple[int, Any]]:
    return _reports(d, output={"node": d.node, "index": d.index, "input": d.input})

def _task(nid: str, *needs: str, **extra: Any) -> dict[str, Any]:
    return {"id": nid, "task": f"t.{nid}", "needs": list(needs), **extra}

def _mapped(nid: str, over: str, *needs: str, **extra: Any) -> dict[str, Any]:
    return _task(nid, *needs, kind="map", over=over,
                input={"item": "${item}", "i": "${index}"}, **extra)

def _lister(d: Any) -> list[tuple[int, Any]]:
    if d.node == "list":
        return _reports(d, output=["a", "b", "c", "d", "e", "f"])
    return _echo(d)

def _retries(d: Any) -> list[tuple[int, Any]]:
    if (d.node == "flaky" and d.attempt < 3) or (d.node == "m" and d.index == 1
                                                   and d.attempt == 1):
        return _reports(d, fail=True)
    return _lister(d)

def _routes(d: Any) -> list[tuple[int, Any]]:
    if d.node == "a":
        return _reports(d, fail=True, retryable=False)
    return _echo(d)

def _coe(d: Any) -> list[tuple[int, Any]]:
    if d.node == "soft" or (d.node == "m" and d.index == 2):
        return _reports(d, fail=True, retryable=False)
    return _lister(d)

def _slow_first(d: Any) -> list[tuple[int, Any]]:
    if d.node == "slow" and d.attempt == 1:
        return _reports(d, end=1500)  # past its 1 s timeout: a late outcome
    return _echo(d)

def _silent_first_of(node: str) -> Script:
    """A script in which ``node``'s first attempt starts, heartbeats once, then its
    worker goes silent and its success comes long after the lease expired."""
    def script(d: Any) -> list[tuple[int, Any]]:
        if d.node == node and d.attempt == 1:
            key = (d.workflow_id, d.node, d.index, d.attempt)
            return [(5, ev.TaskStarted(*key, d.at_ms + 5, "w-frozen")),
                    (1000, ev.TaskHeartbeated(*key, d.at_ms + 1000)),
                    (9000, ev.TaskSucceeded(*key, d.at_ms + 9000, "too late"))]
        return _echo(d)
    return script

def _checkpoints(d: Any) -> list[tuple[int, Any]]:
    key = (d.workflow_id, d.node, d.index, d.attempt)
    out: list[tuple[int, Any]] = [(5, ev.TaskStarted(*key, d.at_ms + 5, "w-1"))]
    if d.node == "resume" and d.attempt == 1:
        out += [(10, ev.TaskCheckpointed(*key, d.at_ms + 10, {"done": 3})),
                (20, ev.TaskFailed(*key, d.at_ms + 20, "preempted", "RuntimeError", True))]
    elif d.node == "stream":
        out += [(10 + i, ev.TaskOutputStreamed(*key, d.at_ms + 10 + i, i, f"tok{i}"))
                for i in range(3)]
        out.append((20, ev.TaskSucceeded(*key, d.at_ms + 20, ["tok0", "tok1", "tok2"])))
    else:
        out.append((20, ev.TaskSucceeded(*key, d.at_ms + 20,
                                          {"resumed_from": d.checkpoint})))
    return out

def _never(d: Any) -> list[tuple[int, Any]]:
    key = (d.workflow_id, d.node, d.index, d.attempt)
    return [(5, ev.TaskStarted(*key, d.at_ms + 5, "w-1"))]

def _wait(nid: str, *needs: str, **extra: Any) -> dict[str, Any]:
    return {"id": nid, "kind": "wait", "signal": "approval", "needs": list(needs),
            "fields": {"approved": "boolean", "by": {"type": "string", "required": False}},
            **extra}

def _signal(name: str, at: int, signal_id: str, **fields: Any) -> tuple[int, Any]:
    return at, ev.SignalSent(f"wf-{name.replace('_', '-')}", "approval", T0 + at, None,
                             signal_id, fields)

def _classify(d: Any) -> list[tuple[int, Any]]:
    if d.node == "classify":
        return _reports(d, output={"label": "other"})
    return _echo(d)

def _wake_up(d: Any) -> list[tuple[int, Any]]:
    if d.node == "a":  # T0 + 5 s: the instant of the sleep until ${nodes.a.output.at}
        return _reports(d, output={"at": "2023-11-14T22:13:25Z"})
    return _echo(d)


def _kind_scenarios() -> dict[str, tuple[dict[str, Any], Any, Script, list[tuple[int, Any]]]]:
    """The scenarios of waits, sleeps and conditions (recorded after the others)."""
    when_doc = {"name": "when", "nodes": [
        _task("classify"),
        _task("refund", "classify", when='${nodes.classify.output.label} == "refund"'),
        _task("refund_done", "refund"),
        _task("other", "classify", when='${nodes.classify.output.label} != "refund"'),
        _task("other_done", "other"),
        _task("join", "refund_done", "other_done",
              input={"r": "${nodes.refund_done.output}", "o": "${nodes.other_done.output}"})]}
    return {
        "wait_signalled": ({"name": "wait", "nodes": [
            _task("a"), _wait("w", "a", timeout=60),
            _task("b", "w", input="${nodes.w.output}")]}, None, _echo,
            [_signal("wait_signalled", 300, "s-1", approved=True, by="ann"),
             _signal("wait_signalled", 310, "s-1", approved=True, by="ann")]),
        "wait_timeout_route": ({"name": "wait-timeout", "nodes": [
            _task("a"), _wait("w", "a", timeout=1, on_error="h"), _task("b", "w"),
            _task("h", input={"e": "${error}"})]}, None, _echo,
            [_signal("wait_timeout_route", 1045, "late", approved=True)]),
        "signal_before_wait": ({"name": "early-signal", "nodes": [
            _task("a"), _wait("w", "a", timeout=60),
            _task("b", "w", input="${nodes.w.output}")]}, None, _echo,
            [_signal("signal_before_wait", 1, "early", approved=False)]),
        "sleep": ({"name": "sleep", "nodes": [
            _task("a"), {"id": "s", "kind": "sleep", "needs": ["a"], "duration": 2},
            {"id": "past", "kind": "sleep", "needs": ["s"], "until": "2001-01-01T00:00:00Z"},
            {"id": "until", "kind": "sleep", "needs": ["past", "a"],
             "until": "${nodes.a.output.at}"},
            _task("b", "until", input="${nodes.until.output}")]}, None, _wake_up, []),
        "when_branch": (when_doc, None, _classify, []),
        "paused": ({"name": "paused", "nodes": [
            _task("a"), _task("c", "a"),
            {"id": "s", "kind": "sleep", "needs": ["a"], "duration": 1},
            _task("b", "s", input="${nodes.a.output}")]}, None, _echo,
            [(20, ev.PauseRequested("wf-paused", T0 + 20, "p-1", "ops", "maintenance")),
             (30, ev.PauseRequested("wf-paused", T0 + 30, "p-2", "ops")),
             (5000, ev.ResumeRequested("wf-paused", T0 + 5000, "r-1", "ops")),
             (5010, ev.PauseRequested("wf-paused", T0 + 5010, "p-1", "ops"))]),
    }


def _kid(d: Any, *, fail: bool = False, output: Any = None) -> list[tuple[int, Any]]:
    """A child workflow's coordinator as its parent sees it: started once the child is
    accepted (worker: the child's id), then its end."""
    key = (d.workflow_id, d.node, d.index, d.attempt)
    kid = child_id(*key)
    out: list[tuple[int, Any]] = [(5, ev.TaskStarted(*key, d.at_ms + 5, kid))]
    if fail:
        out.append((40, ev.TaskFailed(*key, d.at_ms + 40, f"child workflow {kid} failed: "
                                      "x failed after 1 attempt: RuntimeError: boom",
                                      "ChildWorkflowFailed", True)))
    else:
        out.append((40, ev.TaskSucceeded(*key, d.at_ms + 40, {"from": kid, "q": d.input})))
    return out

def _children(d: Any) -> list[tuple[int, Any]]:
    if d.task == "workflow":
        return _kid(d, fail=d.node == "flaky" and d.attempt < 3)
    return _echo(d)

def _agent(d: Any, finish_at: int | None = 2) -> list[tuple[int, Any]]:
    """A loop's decide task (even index) picks search, then read, then finishes at step
    ``finish_at`` (None: never); its tools (odd index) echo."""
    if d.node != "l" or d.index % 2 == 1:
        return _echo(d)
    step = d.index // 2
    if step == finish_at:
        return _reports(d, output={"finish": {"steps": len(d.input["transcript"])},
                                   "spend": 0.5})
    return _reports(d, output={"tool": ("search", "read")[step % 2],
                               "input": {"q": d.input["input"], "step": step}, "spend": 1})


def _child_loop_scenarios(
) -> dict[str, tuple[dict[str, Any], Any, Script, list[tuple[int, Any]]]]:
    """The scenarios of child workflows and loops (recorded after the others)."""
    kid = {"name": "kid", "nodes": [_task("x", input="${input}")],
           "output": "${nodes.x.output}"}
    tools = ["search", {"name": "read", "task": "t.read", "queue": "io", "timeout": 30,
                        "retry": {"max_attempts": 2}}]
    def agent(nid: str = "l", **extra: Any) -> dict[str, Any]:
        return {"id": nid, "kind": "loop", "decide": "t.decide", "tools": tools,
                "input": "${input.q}", **extra}
    return {
        "child": ({"name": "child", "nodes": [
            _task("a"),
            {"id": "c", "kind": "workflow", "needs": ["a"], "workflow": kid,
             "input": {"q": "${nodes.a.output.node}"}},
            _task("b", "c", input="${nodes.c.output}")]}, None, _children, []),
        "child_retries": ({"name": "child-retries", "nodes": [
            {"id": "flaky", "kind": "workflow", "workflow": kid, "input": "${input}",
             "timeout": 60, "retry": {"max_attempts": 3, "backoff_base": 0.5}},
            _task("b", "flaky", input="${nodes.flaky.output}")]}, {"q": 1}, _children, []),
        "loop": ({"name": "loop", "nodes": [agent(max_steps=3),
                                            _task("b", "l", input="${nodes.l.output}")]},
                 {"q": "rivers"}, _agent, []),
        "loop_exhausted": ({"name": "loop-exhausted", "nodes": [
            agent(max_steps=2), _task("b", "l")]},
            {"q": "rivers"}, lambda d: _agent(d, finish_at=None), []),
    }


def _runs(d: Any) -> list[tuple[int, Any]]:
    """A schedule's runs: run 0 takes 3 s (the next fire time overlaps it), run 1 fails,
    run 2 never ends (the schedule is cancelled while it runs)."""
    key = (d.workflow_id, d.node, d.index, d.attempt)
    kid = child_id(*key)
    out: list[tuple[int, Any]] = [(5, ev.TaskStarted(*key, d.at_ms + 5, kid))]
    if d.index == 0:
        out.append((3000, ev.TaskSucceeded(*key, d.at_ms + 3000, {"run": 0})))
    elif d.index == 1:
        out.append((40, ev.TaskFailed(*key, d.at_ms + 40, f"child workflow {kid} failed",
                                      "ChildWorkflowFailed", True)))
    return out


def _schedule_scenarios(
) -> dict[str, tuple[dict[str, Any], Any, Script, list[tuple[int, Any]]]]:
    """The scenario of a schedule (recorded after the others): every 2 s, a fire time
    skipped for overlap, one while paused, a failed run, a cancel while a run runs."""
    wid = "wf-schedule"
    kid = {"name": "kid", "nodes": [_task("x", input="${input}")]}
    return {
        "schedule": ({"name": "schedule:every-2s", "nodes": [
            {"id": "fire", "kind": "schedule", "cron": "* * * * * */2", "workflow": kid,
             "definition": "kid", "definition_version": 2, "input": {"q": 1},
             "misfire_grace": 1}]}, None, _runs,
            [(5500, ev.SignalSent(wid, "pause", T0 + 5500, None, "p-1", None)),
             (7500, ev.SignalSent(wid, "resume", T0 + 7500, None, "r-1", None)),
             (10500, ev.CancelRequested(wid, T0 + 10500, "schedule deleted"))]),
    }


def _restart_scenarios(
) -> dict[str, tuple[dict[str, Any], Any, Script, list[tuple[int, Any]]]]:
    """The scenario of ``restart_on_failure`` (recorded after the others): the worker of
    ``b``'s first attempt goes silent, so the run restarts; generation 2 runs to the end,
    and the first attempt's late success is discarded."""
    return {
        "restart": ({"name": "restart", "restart_on_failure": True, "max_restarts": 1,
                     "nodes": [_task("a"), _task("b", "a", heartbeat_timeout=3)]},
                    None, _silent_first_of("b"), []),
    }


def _rerun_scenarios(
) -> dict[str, tuple[dict[str, Any], Any, Script, list[tuple[int, Any]]]]:
    """The scenario of a rerun (recorded after the others): the map scenario's spec,
    rerun reusing ``list`` and items 0, 2, 3 and 5 of ``m`` (``RERUNS``); items 1 and 4
    and the sink run."""
    return {
        "rerun": ({"name": "map", "nodes": [_task("list"),
                                            _mapped("m", "${nodes.list.output}", "list",
                                                   max_concurrency=1),
                                            _task("sink", "m", input="${nodes.m.output}")]},
                  None, _lister, []),
    }


class _CodeScript:
    """The workers of a code workflow (``GOLDEN_FLOW``): an activation (even index of
    the code node) runs the function over its journal, with no cached instance (each
    one replays from the start, as after a crash), and reports its decision; a child
    step is a child workflow's coordinator (``_kid``); a task step echoes its name and
    input, except ``t.flaky``, which fails every attempt. ``state`` is the state after
    the input that dispatched (``drive`` sets it), from which the coordinator builds an
    activation's input."""

    state: Any = None

    def __call__(self, d: Any) -> list[tuple[int, Any]]:
        import asyncio

        from headwater.core.kinds.code.journal import activation_dispatch
        from headwater.workflows.decorator import info_of
        from headwater.workflows.instances import activate

        if d.task == "workflow":
            return _kid(d)
        if d.node != "main" or d.index % 2 == 1:
            return _reports(d, fail=d.task == "t.flaky", progress=False,
                            output={"task": d.task, "input": d.input})
        payload = activation_dispatch(self.state, d).input
        info = info_of(GOLDEN_FLOW)
        assert info is not None
        decision = asyncio.run(activate(info, payload, cache=False))
        return _reports(d, output=decision, progress=False, end=20)


def _golden_flow() -> Any:
    """The ``@workflow`` of the code scenario: a task, a gather of three, a child
    workflow (an inline ``@workflow``), a sleep, a signal that came during the sleep
    (kept for the wait), a step that fails for good (caught), a signal wait that times
    out (caught), then its output."""
    from headwater import StepFailed, WorkflowContext, workflow

    @workflow(name="golden.kid")
    async def kid(wf: WorkflowContext, q: Any) -> Any:
        return await wf.run("t.x", q=q)

    @workflow(name="golden.code")
    async def flow(wf: WorkflowContext, q: str) -> dict[str, Any]:
        first = await wf.run("t.a", q=q)
        many = await wf.gather(*(wf.run("t.m", i=i) for i in range(3)))
        child = await wf.call(kid, {"q": q})
        await wf.sleep(2)
        approval = await wf.signal("approval", timeout=60)
        caught = []
        try:
            await wf.run("t.flaky", retry={"max_attempts": 2, "backoff_base": 0.5})
        except StepFailed as e:
            caught.append(e.error_type)
        try:
            await wf.signal("never", timeout=1)
        except StepFailed as e:
            caught.append(e.error_type)
        return {"first": first, "many": many, "child": child, "approval": approval,
                "caught": caught, "at": wf.now().isoformat()}

    return flow


GOLDEN_FLOW: Any = None
"""The code scenario's ``@workflow`` (registered when the scenario is recorded)."""


def _code_scenarios() -> dict[str, tuple[dict[str, Any], Any, Script, list[tuple[int, Any]]]]:
    """The scenario of a code workflow (recorded after the others): ``_golden_flow``'s
    function, its activations decided by the SDK, a signal sent during its sleep (and
    the same signal again)."""
    global GOLDEN_FLOW
    if GOLDEN_FLOW is None:
        GOLDEN_FLOW = _golden_flow()
    from headwater.workflows.decorator import info_of

    info = info_of(GOLDEN_FLOW)
    assert info is not None
    wid = "wf-code"
    signals = [(at, ev.SignalSent(wid, "approval", T0 + at, None, "s-1", {"ok": True}))
               for at in (600, 610)]
    return {"code": (info.spec(), {"q": "rivers"}, _CodeScript(), signals)}


def _deadline_scenarios(
) -> dict[str, tuple[dict[str, Any], Any, Script, list[tuple[int, Any]]]]:
    """The scenarios of a run's deadline and of ``ctx.call`` links (recorded after the
    others): ``deadline``'s task never ends and its child workflow never reports, a
    ``ctx.call`` child of the task is linked at 0.5 s (and that link again), and the
    deadline (2 s) fails the run; ``called`` is a run a ``ctx.call`` submitted
    (``PARENTS``), linked to its caller, which runs to its end."""
    wid = "wf-deadline"

    def link(at: int) -> Any:
        return ev.CallLinked(wid, f"{wid}:a:call.0", "a", None, 1, T0 + at, "tenant-a")

    return {
        "deadline": ({"name": "deadline", "deadline": 2, "nodes": [
            _task("a"), {"id": "kid", "kind": "workflow", "workflow": {
                "name": "kid", "nodes": [_task("x")]}}, _task("b", "a")]},
            None, _never, [(500, link(500)), (600, link(600))]),
        "called": ({"name": "called", "nodes": [_task("a", input="${input}")]},
                   {"q": 1}, _echo, []),
    }


PARENTS: dict[str, Any] = {"called": {"parent": {
    "workflow_id": "wf-caller", "node": "fetch", "index": 2, "attempt": 1}}}
"""Scenario -> the ``ctx.call`` link of its submission (none for the others)."""

RERUNS: dict[str, Any] = {"rerun": {
    "of": "wf-map", "reset": None, "nodes": {"list": ["a", "b", "c", "d", "e", "f"]},
    "items": {"m": {str(i): {"node": "m", "index": i, "from": "wf-map"} for i in (0, 2, 3, 5)}}}}
"""Scenario -> the rerun document of its submission (none for the others)."""


def _scenarios() -> dict[str, tuple[dict[str, Any], Any, Script, list[tuple[int, Any]]]]:
    retry = {"max_attempts": 3, "backoff_base": 0.2, "multiplier": 2, "jitter": 0.2}
    return {
        "chain": ({"name": "chain", "nodes": [_task("a", input={"q": "${input.q}"}),
                                              _task("b", "a", input="${nodes.a.output}"),
                                              _task("c", "b")]},
                  {"q": "zip"}, _echo, []),
        "diamond": ({"name": "diamond", "nodes": [_task("a"), _task("b", "a"), _task("c", "a"),
                                                  _task("d", "b", "c")],
                     "output": "${nodes.d.output}"}, None, _echo, []),
        "map": ({"name": "map", "nodes": [_task("list"), _mapped("m", "${nodes.list.output}",
                                                               "list"),
                                          _task("sink", "m", input="${nodes.m.output}")]},
                None, _lister, []),
        "map_bounded": ({"name": "map-bounded",
                         "nodes": [_task("list"),
                                   _mapped("m", "${nodes.list.output}", "list",
                                          max_concurrency=2)]},
                        None, _lister, []),
        "retries": ({"name": "retries", "retry": retry,
                     "nodes": [_task("flaky"), _task("list", "flaky"),
                               _mapped("m", "${nodes.list.output}", "list")]},
                    None, _retries, []),
        "error_route": ({"name": "route", "nodes": [_task("a", on_error="h"), _task("b", "a"),
                                                    _task("h", input={"e": "${error}"}),
                                                    _task("z")]},
                        None, _routes, []),
        "fail_fast": ({"name": "fail-fast", "nodes": [_task("a"), _task("b", "a"),
                                                      _task("c"), _task("d", "b")]},
                      None, _routes, []),
        "continue_on_error": ({"name": "coe",
                               "nodes": [_task("soft", continue_on_error=True),
                                         _task("after", "soft", input="${nodes.soft.output}"),
                                         _task("list"),
                                         _mapped("m", "${nodes.list.output}", "list",
                                                continue_on_error=True),
                                         _task("sink", "m", input="${nodes.m.output}")]},
                              None, _coe, []),
        "timeout": ({"name": "timeout", "nodes": [_task("slow", timeout=1,
                                                       retry={"max_attempts": 2}),
                                                  _task("next", "slow")]},
                    None, _slow_first, []),
        "lost_lease": ({"name": "lease", "nodes": [_task("job", heartbeat_timeout=3,
                                                        retry={"max_attempts": 2})]},
                       None, _silent_first_of("job"), []),
        "checkpoint": ({"name": "checkpoint", "retry": {"max_attempts": 2},
                        "nodes": [_task("resume"), _task("stream", "resume")]},
                       None, _checkpoints, []),
        "cancel": ({"name": "cancel", "nodes": [_task("list"),
                                                _mapped("m", "${nodes.list.output}", "list",
                                                       max_concurrency=3)]},
                   None, lambda d: _lister(d) if d.node == "list" else _never(d),
                   [(500, ev.CancelRequested("wf-cancel", T0 + 500, "user asked"))]),
    }


class _Simulation:
    """The coordinator and workers around the machine: inputs in time order, each
    dispatch answered by the scenario's script, timers fired when due."""

    def __init__(self, wid: str, script: Script) -> None:
        self.wid, self.script = wid, script
        self.queue: list[tuple[int, int, Any]] = []
        self.order = 0
        self.armed: set[tuple[str, int]] = set()

    def push(self, at_ms: int, item: Any) -> None:
        heapq.heappush(self.queue, (at_ms, self.order, item))
        self.order += 1

    def follow(self, recorded: list[Any]) -> None:
        """Queue what the recorded events give rise to: reports and retry timers."""
        for e in recorded:
            if isinstance(e.body, ev.TaskDispatched):
                for delay, report in self.script(e.body):
                    self.push(e.body.at_ms + delay, report)
            elif isinstance(e.body, ev.TimerScheduled):
                self.push(e.body.fire_at_ms,
                          ev.TimerFired(self.wid, e.body.timer_id, e.body.fire_at_ms))

    def arm(self, state: Any) -> None:
        """Queue the deadline and lease timers the state implies, and the node timers
        (a wait's timeout, a sleep's wake-up, a schedule's fire time) it holds, once
        each."""
        for timer_id, timer in state.timers.items():
            node_timer = parse_node_timer_id(timer_id) is not None or is_schedule_timer(timer_id)
            if node_timer and (timer_id, timer.fire_at_ms) not in self.armed:
                self.armed.add((timer_id, timer.fire_at_ms))
                self.push(timer.fire_at_ms, ev.TimerFired(self.wid, timer_id, timer.fire_at_ms))
        deadline = getattr(state, "deadline_at_ms", None)  # the run's own deadline
        if deadline is not None and ("run:deadline", deadline) not in self.armed:
            self.armed.add(("run:deadline", deadline))
            self.push(deadline, ev.TimerFired(self.wid, "run:deadline", deadline))
        for key, t in state.tasks.items():
            for timer_id, fire_at in gc.state().task_timers(t, key):
                if (timer_id, fire_at) not in self.armed:
                    self.armed.add((timer_id, fire_at))
                    self.push(fire_at, ev.TimerFired(self.wid, timer_id, fire_at))


def _limited(d: Any) -> list[tuple[int, Any]]:
    if d.node == "m" and d.index == 1 and d.attempt == 1:
        return _reports(d, fail=True)
    return _echo(d)


def _limit_scenarios(
) -> dict[str, tuple[dict[str, Any], Any, Script, list[tuple[int, Any]]]]:
    """The scenario of keyed limits (recorded after the others), the attempts' side: the
    limiters' grants come scripted. ``a`` waits for a concurrency permit of its input's
    customer, then a rate permit, then runs (a copy of a grant changes nothing); the
    map's items each wait for theirs; item 1 fails once and its retry waits again."""
    wid = "wf-limited"
    acme, api, k = "limit::concurrency:acme", "limit::rate:api", "limit::concurrency:k"
    return {
        "limited": ({"name": "limited", "nodes": [
            _task("a", input="${input}", concurrency={"key": "${input.customer}", "limit": 1},
                  rate_limit={"key": "api", "limit": 2, "window_s": 1}),
            _mapped("m", "${input.items}", "a", concurrency={"key": "k", "limit": 1},
                    retry={"max_attempts": 2, "backoff_base": 1, "jitter": 0})]},
            {"customer": "acme", "items": [1, 2]}, _limited,
            [(100, ev.PermitGranted(wid, "a", None, 1, acme, T0 + 100)),
             (150, ev.PermitGranted(wid, "a", None, 1, api, T0 + 150)),
             (160, ev.PermitGranted(wid, "a", None, 1, api, T0 + 160)),
             (300, ev.PermitGranted(wid, "m", 0, 1, k, T0 + 300)),
             (400, ev.PermitGranted(wid, "m", 1, 1, k, T0 + 400)),
             (5000, ev.PermitGranted(wid, "m", 1, 2, k, T0 + 5000))]),
    }


def drive(name: str, doc: dict[str, Any], inp: Any, script: Script,
          extra: list[tuple[int, Any]]) -> list[dict[str, Any]]:
    """Run one scenario to its end; the golden lines."""
    sim = _Simulation(f"wf-{name.replace('_', '-')}", script)
    sim.push(T0, ev.WorkflowSubmitted(sim.wid, doc, inp, T0, "tenant-a",
                                      **({"rerun": RERUNS[name]} if name in RERUNS else {}),
                                      **PARENTS.get(name, {})))
    for delay, item in extra:
        sim.push(T0 + delay, item)
    state = None
    lines: list[dict[str, Any]] = []
    while sim.queue:
        _, _, item = heapq.heappop(sim.queue)
        result = gc.machine().step(state, item)
        state = result.state
        lines.append({"input": gc.dump_record(item),
                      "decisions": [gc.dump_event(e) for e in result.events]})
        if isinstance(script, _CodeScript):
            script.state = state
        sim.follow(result.events)
        if state is not None and not state.status.terminal:
            sim.arm(state)
    assert state is not None and state.status.terminal, f"{name} did not end"
    lines.append({"final": gc.state_doc(state)})
    return lines


def main() -> None:
    """Write ``<scenario>.jsonl`` beside this file for every scenario (or those named)."""
    wanted = set(sys.argv[1:])
    for name, (doc, inp, script, extra) in {**_scenarios(), **_kind_scenarios(),
                                            **_child_loop_scenarios(),
                                            **_schedule_scenarios(),
                                            **_restart_scenarios(),
                                            **_rerun_scenarios(),
                                            **_code_scenarios(),
                                            **_limit_scenarios(),
                                            **_deadline_scenarios()}.items():
        if wanted and name not in wanted:
            continue
        lines = drive(name, doc, inp, script, extra)
        (OUT / f"{name}.jsonl").write_bytes(
            b"".join(orjson.dumps(line, option=orjson.OPT_SORT_KEYS) + b"\n" for line in lines))
        print(f"{name}: {len(lines) - 1} inputs, final {lines[-1]['final']['status']}")


if __name__ == "__main__":
    main()
