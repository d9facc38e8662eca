"""A step's report that carries the function's next decision (a continuation): taken as
that activation when it is exactly the one the coordinator would dispatch, ignored
otherwise (``headwater/core/kinds/code/continuation.py``)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from machine_harness import T0, WF, check_history, ok, replay, run, submit

from headwater.codec import decode
from headwater.core import events as ev
from headwater.core.kinds.code.journal import act_digest
from headwater.core.state import WorkflowState
from headwater.core.status import TaskStatus, WorkflowStatus
from headwater.topics import Topics
from services.coordinator.records import encode_outputs

SPEC: dict[str, Any] = {
    "name": "code", "output": "${nodes.main.output}",
    "nodes": [{"id": "main", "kind": "code", "task": "wf.code", "input": "${input}",
               "retry": {"max_attempts": 100, "backoff_base": 1}, "max_events": 80}]}
TASK = {"op": "task", "name": "t.a", "queue": "cpu", "input": {"x": 1}}
STEP_AT = T0 + 200


def _names(events: list[ev.HistoryEvent]) -> list[str]:
    return [type(e.body).__name__ for e in events]


def _after_first_step(steps: int = 1) -> WorkflowState:
    """Activation 0 decided ``steps`` task steps (indexes 1, 3, ...)."""
    return run([submit(SPEC, {}), ok("main", {"steps": [TASK] * steps}, index=0)]).state


def _step_ok(index: int, continuation: Any, at: int = STEP_AT) -> ev.TaskSucceeded:
    return dataclasses.replace(ok("main", {"n": index}, index=index, at=at),
                               continuation=continuation)


FIRST = act_digest("", T0, [])
"""The digest of activation 0 (at T0, given no result)."""


def _cont(act: int = 1, through: int = 1, at_ms: int = STEP_AT - 5,
          decision: Any = None, digest: str = FIRST) -> dict[str, Any]:
    return {"act": act, "through": through, "at_ms": at_ms, "first_ms": T0, "after_ms": T0,
            "digest": digest, "decision": {"steps": [TASK]} if decision is None else decision}


def test_a_continuation_is_recorded_as_the_next_activation_and_its_steps_go_out() -> None:
    state = _after_first_step()
    result = run([_step_ok(1, _cont())], state)
    assert _names(result.history) == ["TaskSucceeded", "TaskDispatched", "TaskSucceeded",
                                      "TaskDispatched"]
    step, act, decided, nxt = (e.body for e in result.history)
    assert isinstance(step, ev.TaskSucceeded) and step.continuation is None
    assert isinstance(act, ev.TaskDispatched)
    assert (act.index, act.attempt, act.at_ms, act.input) == (
        2, 1, STEP_AT - 5, {"activation": 1, "continued": 0})
    assert isinstance(decided, ev.TaskSucceeded) and decided.index == 2
    assert decided.output == {"steps": [TASK]}
    assert isinstance(nxt, ev.TaskDispatched) and nxt.index == 3
    code = result.state.nodes["main"].code
    assert code is not None and code["decided"] == 2
    assert code["acts"][1] == [STEP_AT - 5, 1, act_digest(FIRST, STEP_AT - 5, [0])]
    assert result.state.tasks["main[2]"].status is TaskStatus.SUCCEEDED
    # The whole history folds to the same state (a replay, a restarted coordinator).
    whole = run([submit(SPEC, {}), ok("main", {"steps": [TASK]}, index=0),
                 _step_ok(1, _cont())])
    check_history(whole.history, whole.state)
    assert replay(whole.history) == whole.state


def test_no_dispatch_record_goes_to_a_worker_for_a_continued_activation() -> None:
    result = run([_step_ok(1, _cont())], _after_first_step())
    topics = Topics("unit-continued")
    sent = encode_outputs(topics, result.history, 1 << 20, result.state)
    dispatched = [decode(o.value) for o in sent if o.topic != topics.events]
    assert [(d.node, d.index) for d in dispatched] == [("main", 3)]  # not activation 1


def test_a_chain_goes_where_the_instance_is_and_a_fan_out_spreads() -> None:
    """An activation and a step its decision issued alone are keyed by the workflow id
    (one partition: the worker holding the instance); a gather's steps by their
    dispatch ids; a spec's tasks as before."""
    topics = Topics("unit-keys")

    def keys(history: list[ev.HistoryEvent], state: WorkflowState) -> dict[int | None, bytes]:
        sent = encode_outputs(topics, history, 1 << 20, state)
        return {decode(o.value).index: o.key for o in sent if o.topic != topics.events}

    first = run([submit(SPEC, {})])
    assert keys(first.history, first.state) == {0: WF.encode()}
    chain = run([ok("main", {"steps": [TASK]}, index=0)], first.state)
    assert keys(chain.history, chain.state) == {1: WF.encode()}
    fan = run([submit(SPEC, {}), ok("main", {"steps": [TASK] * 3}, index=0)])
    sent = keys(fan.history, fan.state)
    assert sent.pop(0) == WF.encode() and sorted(sent) == [1, 3, 5]
    assert all(key != WF.encode() and key.decode().startswith(WF) for key in sent.values())
    assert len(set(sent.values())) == 3
    spec = run([submit({"name": "s", "nodes": [{"id": "a", "task": "t.a"}]}, {})])
    assert all(key != WF.encode() for key in keys(spec.history, spec.state).values())


def test_a_patch_marker_does_not_make_a_chains_step_a_fan_outs() -> None:
    """``wf.patched`` records a marker in the decision that issues the chain's next step;
    no worker runs the marker, so the step is still the one its decision issued and goes
    where the instance is. Two tasks beside a marker are still a fan-out."""
    topics = Topics("unit-keys")
    patch = {"op": "patch", "name": "v2"}

    def keys(steps: list[dict[str, Any]]) -> dict[int | None, bytes]:
        result = run([ok("main", {"steps": steps}, index=0)], run([submit(SPEC, {})]).state)
        sent = encode_outputs(topics, result.history, 1 << 20, result.state)
        return {decode(o.value).index: o.key for o in sent if o.topic != topics.events}

    assert keys([patch, TASK]) == {3: WF.encode()}
    assert keys([TASK, patch]) == {1: WF.encode()}
    fan = keys([TASK, patch, TASK])
    assert sorted(fan) == [1, 5] and WF.encode() not in fan.values()


def test_the_activation_is_dispatched_as_usual_when_the_continuation_is_not_its_own() -> None:
    state = _after_first_step()
    wrong: list[Any] = [
        _cont(act=2), _cont(act=0), _cont(through=0), _cont(through=2),
        _cont(at_ms=STEP_AT + 1),  # after the coordinator's own time
        _cont(at_ms=T0 - 1),  # before the previous activation's
        {**_cont(), "after_ms": T0 + 1},  # an instance that ran another activation 0
        {**_cont(), "first_ms": T0 - 7},  # an instance of an earlier run of the id
        {k: v for k, v in _cont().items() if k != "after_ms"},
        _cont(digest=act_digest("", T0, [0])),  # an instance given another input
        {k: v for k, v in _cont().items() if k != "digest"},
        _cont(decision={"steps": [{"op": "teleport"}]}),
        _cont(decision={"steps": [{**TASK, "step": 7}]}),  # numbered after 7 steps
        {"act": "1", "through": 1, "at_ms": STEP_AT, "decision": {"steps": []}},
        {"act": 1, "through": True, "at_ms": STEP_AT, "decision": {"steps": []}},
        ["not", "an", "object"], {"act": 1},
    ]
    for c in wrong:  # (the machine evolves the state it is given: a copy each time)
        result = run([_step_ok(1, c)], copy.deepcopy(state))
        assert _names(result.history) == ["TaskSucceeded", "TaskDispatched"], c
        act = result.history[-1].body
        assert isinstance(act, ev.TaskDispatched)
        assert (act.index, act.input, act.at_ms) == (2, {"activation": 1}, STEP_AT), c
        assert isinstance(result.history[0].body, ev.TaskSucceeded)
        assert result.history[0].body.continuation is None


def test_a_second_result_waiting_or_an_activation_in_flight_refuses_it() -> None:
    two = _after_first_step(steps=2)
    first = run([ok("main", 1, index=1, at=T0 + 150)], two)  # activation 1 in flight
    late = run([_step_ok(3, _cont(act=2, through=2))], copy.deepcopy(first.state))
    assert _names(late.history) == ["TaskSucceeded"]  # activation 1 gets it later
    decided = run([ok("main", {"steps": []}, index=2, at=T0 + 160)], first.state).state
    # Activation 1 decided on result 0 alone; step 1's result is then the only one
    # waiting, and activation 2 is the next: a continuation for it is taken.
    second = act_digest(FIRST, T0 + 150, [0])
    assert decided.nodes["main"].code is not None
    assert decided.nodes["main"].code["acts"][1][2] == second
    wrong = run([_step_ok(3, {**_cont(act=2, through=2, at_ms=T0 + 170), "after_ms": T0 + 150,
                              "digest": act_digest(FIRST, T0 + 150, [1])})],
                copy.deepcopy(decided))
    assert _names(wrong.history) == ["TaskSucceeded", "TaskDispatched"]
    taken = run([_step_ok(3, {**_cont(act=2, through=2, at_ms=T0 + 170, digest=second),
                               "after_ms": T0 + 150})], decided)
    assert _names(taken.history)[:3] == ["TaskSucceeded", "TaskDispatched", "TaskSucceeded"]


def test_a_continuation_that_finishes_ends_the_run_with_its_progress_recorded() -> None:
    c = {**_cont(decision={"steps": [], "finish": {"done": True}}),
         "progress": [0.5, "half"]}
    result = run([_step_ok(1, c)], _after_first_step())
    assert result.state.status is WorkflowStatus.SUCCEEDED
    assert result.state.output == {"done": True}
    progressed = [e.body for e in result.history if isinstance(e.body, ev.TaskProgressed)]
    assert [(p.index, p.fraction, p.message) for p in progressed] == [(2, 0.5, "half")]


def test_a_continuation_on_an_activations_report_is_ignored() -> None:
    history = run([submit(SPEC, {}), dataclasses.replace(
        ok("main", {"steps": [TASK]}, index=0), continuation=_cont())]).history
    assert [(e.body.index, e.body.input) for e in history
            if isinstance(e.body, ev.TaskDispatched)] == [(0, {"activation": 0}),
                                                          (1, {"x": 1})]
    assert all(e.workflow_id == WF for e in history)
