"""Record the golden histories: ``python tests/unit/headwater/core/golden_record.py``.

Each scenario drives the state machine as a coordinator and its workers would: the
submission, then every input a dispatch, a timer or a worker's script gives rise to, in
time order. Every input is written with the decisions ``step`` took for it (the history
events it recorded), and the last line holds the final state. The files were recorded
from the machine of commit 4cb74d7 and are the reference from then on: a change to the
machine that folds one of them differently fails ``test_golden_histories``. Record
again only for a deliberate change of behaviour, and say so in the commit.

Line format (JSON): ``{"input": RECORD, "decisions": [EVENT, ...]}`` per input, then
``{"final": STATE}``. ``RECORD`` is ``{"type": class name, "fields": {...}}``; ``EVENT``
adds ``"seq"``. ``STATE`` is ``golden.state_doc`` of the final state.
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import golden_codec as gc
import orjson

HERE = Path(__file__).parent / "golden"
T0 = 1_700_000_000_000
Script = Callable[[Any], list[tuple[int, Any]]]
"""Given a ``TaskDispatched``, the reports its worker sends: ``(ms after dispatch, input)``."""


def _scenarios() -> dict[str, tuple[dict[str, Any], Any, Script, list[tuple[int, Any]]]]:
    ev = gc.events()

    def reports(d: Any, *, fail: bool = False, output: Any = None, retryable: bool = True,
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

    def echo(d: Any) -> list[tuple[int, Any]]:
        return reports(d, output={"node": d.node, "index": d.index, "input": d.input})

    def task(nid: str, *needs: str, **extra: Any) -> dict[str, Any]:
        return {"id": nid, "task": f"t.{nid}", "needs": list(needs), **extra}

    def mapped(nid: str, over: str, *needs: str, **extra: Any) -> dict[str, Any]:
        return task(nid, *needs, kind="map", over=over,
                    input={"item": "${item}", "i": "${index}"}, **extra)

    def lister(d: Any) -> list[tuple[int, Any]]:
        if d.node == "list":
            return reports(d, output=["a", "b", "c", "d", "e", "f"])
        return echo(d)

    def retries(d: Any) -> list[tuple[int, Any]]:
        if (d.node == "flaky" and d.attempt < 3) or (d.node == "m" and d.index == 1
                                                       and d.attempt == 1):
            return reports(d, fail=True)
        return lister(d)

    def routes(d: Any) -> list[tuple[int, Any]]:
        if d.node == "a":
            return reports(d, fail=True, retryable=False)
        return echo(d)

    def coe(d: Any) -> list[tuple[int, Any]]:
        if d.node == "soft" or (d.node == "m" and d.index == 2):
            return reports(d, fail=True, retryable=False)
        return lister(d)

    def slow_first(d: Any) -> list[tuple[int, Any]]:
        if d.node == "slow" and d.attempt == 1:
            return reports(d, end=1500)  # past its 1 s timeout: a late outcome
        return echo(d)

    def silent_first(d: Any) -> list[tuple[int, Any]]:
        if d.node == "job" and d.attempt == 1:
            key = (d.workflow_id, d.node, d.index, d.attempt)
            return [(5, ev.TaskStarted(*key, d.at_ms + 5, "w-frozen")),
                    (1000, ev.TaskHeartbeated(*key, d.at_ms + 1000)),
                    (9000, ev.TaskSucceeded(*key, d.at_ms + 9000, "too late"))]
        return echo(d)

    def checkpoints(d: Any) -> list[tuple[int, Any]]:
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

    def never(d: Any) -> list[tuple[int, Any]]:
        key = (d.workflow_id, d.node, d.index, d.attempt)
        return [(5, ev.TaskStarted(*key, d.at_ms + 5, "w-1"))]

    retry = {"max_attempts": 3, "backoff_base": 0.2, "multiplier": 2, "jitter": 0.2}
    return {
        "chain": ({"name": "chain", "nodes": [task("a", input={"q": "${input.q}"}),
                                              task("b", "a", input="${nodes.a.output}"),
                                              task("c", "b")]},
                  {"q": "zip"}, echo, []),
        "diamond": ({"name": "diamond", "nodes": [task("a"), task("b", "a"), task("c", "a"),
                                                  task("d", "b", "c")],
                     "output": "${nodes.d.output}"}, None, echo, []),
        "map": ({"name": "map", "nodes": [task("list"), mapped("m", "${nodes.list.output}",
                                                               "list"),
                                          task("sink", "m", input="${nodes.m.output}")]},
                None, lister, []),
        "map_bounded": ({"name": "map-bounded",
                         "nodes": [task("list"),
                                   mapped("m", "${nodes.list.output}", "list",
                                          max_concurrency=2)]},
                        None, lister, []),
        "retries": ({"name": "retries", "retry": retry,
                     "nodes": [task("flaky"), task("list", "flaky"),
                               mapped("m", "${nodes.list.output}", "list")]},
                    None, retries, []),
        "error_route": ({"name": "route", "nodes": [task("a", on_error="h"), task("b", "a"),
                                                    task("h", input={"e": "${error}"}),
                                                    task("z")]},
                        None, routes, []),
        "fail_fast": ({"name": "fail-fast", "nodes": [task("a"), task("b", "a"),
                                                      task("c"), task("d", "b")]},
                      None, routes, []),
        "continue_on_error": ({"name": "coe",
                               "nodes": [task("soft", continue_on_error=True),
                                         task("after", "soft", input="${nodes.soft.output}"),
                                         task("list"),
                                         mapped("m", "${nodes.list.output}", "list",
                                                continue_on_error=True),
                                         task("sink", "m", input="${nodes.m.output}")]},
                              None, coe, []),
        "timeout": ({"name": "timeout", "nodes": [task("slow", timeout=1,
                                                       retry={"max_attempts": 2}),
                                                  task("next", "slow")]},
                    None, slow_first, []),
        "lost_lease": ({"name": "lease", "nodes": [task("job", heartbeat_timeout=3,
                                                        retry={"max_attempts": 2})]},
                       None, silent_first, []),
        "checkpoint": ({"name": "checkpoint", "retry": {"max_attempts": 2},
                        "nodes": [task("resume"), task("stream", "resume")]},
                       None, checkpoints, []),
        "cancel": ({"name": "cancel", "nodes": [task("list"),
                                                mapped("m", "${nodes.list.output}", "list",
                                                       max_concurrency=3)]},
                   None, lambda d: lister(d) if d.node == "list" else never(d),
                   [(500, ev.CancelRequested("wf-cancel", T0 + 500, "user asked"))]),
    }


def drive(name: str, doc: dict[str, Any], inp: Any, script: Script,
          extra: list[tuple[int, Any]]) -> list[dict[str, Any]]:
    """Run one scenario to its end; the golden lines."""
    ev, machine, state_mod = gc.events(), gc.machine(), gc.state()
    wid = f"wf-{name.replace('_', '-')}"
    queue: list[tuple[int, int, Any]] = []
    order = 0

    def push(at_ms: int, item: Any) -> None:
        nonlocal order
        heapq.heappush(queue, (at_ms, order, item))
        order += 1

    push(T0, ev.WorkflowSubmitted(wid, doc, inp, T0, "tenant-a"))
    for delay, item in extra:
        push(T0 + delay, item)
    armed: set[tuple[str, int]] = set()
    state = None
    lines: list[dict[str, Any]] = []
    while queue:
        _, _, item = heapq.heappop(queue)
        result = machine.step(state, item)
        state = result.state
        lines.append({"input": gc.dump_record(item),
                      "decisions": [gc.dump_event(e) for e in result.events]})
        for e in result.events:
            if isinstance(e.body, ev.TaskDispatched):
                for delay, report in script(e.body):
                    push(e.body.at_ms + delay, report)
            elif isinstance(e.body, ev.TimerScheduled):
                push(e.body.fire_at_ms, ev.TimerFired(wid, e.body.timer_id, e.body.fire_at_ms))
        if state is None or state.status.terminal:
            continue
        for key, t in state.tasks.items():
            for timer_id, fire_at in state_mod.task_timers(t, key):
                if (timer_id, fire_at) not in armed:
                    armed.add((timer_id, fire_at))
                    push(fire_at, ev.TimerFired(wid, timer_id, fire_at))
    assert state is not None and state.status.terminal, f"{name} did not end"
    lines.append({"final": gc.state_doc(state)})
    return lines


def main() -> None:
    """Write ``<scenario>.jsonl`` beside this file for every scenario (or those named)."""
    wanted = set(sys.argv[1:])
    for name, (doc, inp, script, extra) in _scenarios().items():
        if wanted and name not in wanted:
            continue
        lines = drive(name, doc, inp, script, extra)
        (HERE / f"{name}.jsonl").write_bytes(
            b"".join(orjson.dumps(line, option=orjson.OPT_SORT_KEYS) + b"\n" for line in lines))
        print(f"{name}: {len(lines) - 1} inputs, final {lines[-1]['final']['status']}")


if __name__ == "__main__":
    main()
