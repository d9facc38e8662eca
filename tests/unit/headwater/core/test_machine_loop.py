"""State-machine tables: bounded agent loops (``kind: loop``).

Task ``2k`` of a loop node is the decide task of step k, ``2k+1`` the tool it picked.
"""

from __future__ import annotations

from typing import Any

import pytest
from machine_harness import (
    T0,
    Case,
    cancel,
    check_case,
    check_history,
    fail,
    fired,
    has,
    ok,
    run,
    spec,
    task,
)

from headwater.core import events as ev
from headwater.core.kinds.loop.rules import OUTPUT_ERROR, decision_fault

TOOLS: list[Any] = ["search", {"name": "read", "task": "t.read", "queue": "io", "timeout": 4,
                               "heartbeat_timeout": 2,
                               "retry": {"max_attempts": 2, "backoff_base": 0.5}}]


def loop(node_id: str = "l", *needs: str, **extra: Any) -> dict[str, Any]:
    """A loop node deciding with ``t.decide`` over ``TOOLS`` (``max_steps`` 3)."""
    doc: dict[str, Any] = {"id": node_id, "kind": "loop", "decide": "t.decide",
                           "tools": TOOLS, "max_steps": 3, "input": {"q": "${input.q}"},
                           "needs": list(needs)}
    return {**doc, **extra}


ONE = spec(loop(), task("after", "l", input="${nodes.l.output}"))
RETRYING = spec(loop(retry={"max_attempts": 2, "backoff_base": 1}))
BUDGET = spec(loop(max_steps=10, budget=5))
FINISHING = spec(loop(max_steps=2, on_exhausted="finish"))
INPUT = {"q": "rivers"}


def decide(step: int, decision: Any, *, attempt: int = 1, at: int = T0 + 100) -> ev.TaskSucceeded:
    """Decide task of ``step`` returned ``decision``."""
    return ok("l", decision, index=2 * step, attempt=attempt, at=at)


def tool(step: int, output: Any, *, attempt: int = 1, at: int = T0 + 200) -> ev.TaskSucceeded:
    """Tool of ``step`` returned ``output``."""
    return ok("l", output, index=2 * step + 1, attempt=attempt, at=at)


SEARCH = {"tool": "search", "input": {"q": "rivers"}}
READ = {"tool": "read", "input": {"doc": 7}, "spend": 2}
STEP_0 = [decide(0, SEARCH), tool(0, ["doc 7"])]
STEP_1 = [decide(1, READ), tool(1, "the text")]
ENTRY_0 = {"step": 0, "tool": "search", "input": {"q": "rivers"}, "output": ["doc 7"]}
ENTRY_1 = {"step": 1, "tool": "read", "input": {"doc": 7}, "output": "the text"}

CASES = [
    Case("a loop starts with the decide task of step 0 on the node's queue",
         ONE, input=INPUT, submit=False, given=[],
         when=ev.WorkflowSubmitted("wf-1", ONE, INPUT, T0, "tenant-a"),
         events=[("WorkflowAccepted", {}),
                 ("TaskDispatched", {"node": "l", "index": 0, "task": "t.decide",
                                     "queue": "cpu", "input": {
                                         "input": {"q": "rivers"}, "transcript": [],
                                         "step": 0, "tools": ["search", "read"],
                                         "spent": 0.0}})],
         state={"nodes.l.status": "running", "nodes.l.steps": 0}),
    Case("decide picks a tool: the step is recorded and the tool dispatched with its input",
         ONE, input=INPUT, given=[], when=decide(0, SEARCH),
         events=[("TaskSucceeded", {"index": 0}),
                 ("LoopStepDecided", {"step": 0, "tool": "search", "input": {"q": "rivers"},
                                      "finish": False, "spend": 0.0}),
                 ("TaskDispatched", {"index": 1, "task": "search", "queue": "cpu",
                                     "input": {"q": "rivers"}})],
         state={"nodes.l.steps": 1, "nodes.l.transcript": None}),
    Case("the tool succeeded: its call joins the transcript and decide runs again",
         ONE, input=INPUT, given=[decide(0, SEARCH)], when=tool(0, ["doc 7"]),
         events=[("TaskSucceeded", {"index": 1}),
                 ("TaskDispatched", {"index": 2, "task": "t.decide", "input": {
                     "input": {"q": "rivers"}, "transcript": [ENTRY_0], "step": 1,
                     "tools": ["search", "read"], "spent": 0.0}})],
         state={"nodes.l.transcript": [ENTRY_0], "outputs": {}}),
    Case("a tool runs as its own task, on its own queue, with its own timeout and lease",
         ONE, input=INPUT, given=STEP_0, when=decide(1, READ),
         events=[("TaskSucceeded", {}), ("LoopStepDecided", {"tool": "read", "spend": 2.0}),
                 ("TaskDispatched", {"index": 3, "task": "t.read", "queue": "io",
                                     "timeout_s": 4.0, "heartbeat_timeout_s": 2.0,
                                     "input": {"doc": 7}})],
         state={"nodes.l.spent": 2.0, "tasks.l[3].deadline_ms": T0 + 4100}),
    Case("a tool's failure is retried by the tool's policy (the node's has 1 attempt)",
         ONE, input=INPUT, given=[*STEP_0, decide(1, READ)],
         when=fail("l", index=3, at=T0 + 300),
         events=[("TaskFailed", {"index": 3}),
                 ("TimerScheduled", {"timer_id": "retry:l[3]:2", "fire_at_ms": T0 + 800})],
         state={"tasks.l[3].status": "retry_wait", "nodes.l.running": 0}),
    Case("the retried tool is the same tool, with the same input",
         ONE, input=INPUT, given=[*STEP_0, decide(1, READ), fail("l", index=3, at=T0 + 300)],
         when=fired("retry:l[3]:2", T0 + 800),
         events=[("TimerFired", {}),
                 ("TaskDispatched", {"index": 3, "attempt": 2, "task": "t.read",
                                     "queue": "io", "input": {"doc": 7}})]),
    Case("a tool's deadline is its own timeout",
         ONE, input=INPUT, given=[*STEP_0, decide(1, READ)],
         when=fired("deadline:l[3]:1", T0 + 4100),
         events=[("TimerFired", {}),
                 ("TaskFailed", {"error_type": "TimeoutError",
                                 "error": has("no outcome 4 s after dispatch")}),
                 ("TimerScheduled", {"timer_id": "retry:l[3]:2", "fire_at_ms": T0 + 4600})]),
    Case("a tool that fails for good fails the loop, naming the tool and the step",
         ONE, input=INPUT, given=[*STEP_0, decide(1, READ), fail("l", index=3, at=T0 + 300),
                                  fired("retry:l[3]:2", T0 + 800)],
         when=fail("l", index=3, attempt=2, at=T0 + 900),
         events=[("TaskFailed", {"attempt": 2}),
                 ("NodeFinished", {"status": "failed",
                                   "error": has("l[3] failed after 2 attempts",
                                                "tool read of step 1")}),
                 ("NodeFinished", {"node": "after", "status": "upstream_failed"}),
                 ("WorkflowFailed", {})]),
    Case("decide finishes: the loop succeeds with the finish value as its output",
         ONE, input=INPUT, given=STEP_0, when=decide(1, {"finish": {"answer": "Nile"}}),
         events=[("TaskSucceeded", {}),
                 ("LoopStepDecided", {"step": 1, "finish": True,
                                      "output": {"answer": "Nile"}}),
                 ("NodeFinished", {"node": "l", "status": "succeeded"}),
                 ("TaskDispatched", {"node": "after", "input": {"answer": "Nile"}})],
         state={"outputs.l": {"answer": "Nile"}, "nodes.l.steps": 2}),
    Case("the last step's tool done: max_steps reached, on_exhausted fail fails the loop",
         ONE, input=INPUT, given=[*STEP_0, *STEP_1, decide(2, SEARCH)],
         when=tool(2, ["doc 9"]),
         events=[("TaskSucceeded", {"index": 5}),
                 ("NodeFinished", {"status": "failed",
                                   "error": "loop l: reached max_steps 3"}),
                 ("NodeFinished", {"node": "after", "status": "upstream_failed"}),
                 ("WorkflowFailed", {"error": "loop l: reached max_steps 3"})],
         state={"nodes.l.failure.message": "loop l: reached max_steps 3"}),
    Case("max_steps reached with on_exhausted finish: succeeds with the transcript",
         FINISHING, input=INPUT, given=[*STEP_0, decide(1, READ)], when=tool(1, "the text"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"status": "succeeded"}),
                 ("WorkflowSucceeded", {"output": {"l": {
                     "finished": False, "transcript": [ENTRY_0, ENTRY_1]}}})],
         state={"outputs.l.finished": False}),
    Case("spending below the budget: the next step's decide sees what was spent",
         BUDGET, input=INPUT, given=[*STEP_0, *STEP_1, decide(2, READ)],
         when=tool(2, "more text"),
         events=[("TaskSucceeded", {}),
                 ("TaskDispatched", {"index": 6, "input": {
                     "input": {"q": "rivers"}, "step": 3, "spent": 4.0,
                     "tools": ["search", "read"],
                     "transcript": [ENTRY_0, ENTRY_1,
                                    {"step": 2, "tool": "read", "input": {"doc": 7},
                                     "output": "more text"}]}})]),
    Case("the spending reaches the budget: the loop is exhausted",
         BUDGET, input=INPUT, given=[*STEP_0, *STEP_1, decide(2, {**READ, "spend": 3})],
         when=tool(2, "more text"),
         events=[("TaskSucceeded", {}),
                 ("NodeFinished", {"status": "failed",
                                   "error": "loop l: spent 5 of budget 5"}),
                 ("WorkflowFailed", {})]),
    Case("decide names a tool not in tools: its attempt fails (LoopDecisionError), retried",
         RETRYING, input=INPUT, given=[], when=decide(0, {"tool": "shell", "input": {}}),
         events=[("TaskFailed", {"index": 0, "error_type": OUTPUT_ERROR, "retryable": True,
                                 "error": has("picked tool 'shell'", "search, read")}),
                 ("TimerScheduled", {"timer_id": "retry:l[0]:2"})],
         state={"nodes.l.steps": 0, "tasks.l[0].status": "retry_wait"}),
    Case("a tool input that is not an object fails the decide attempt, not the tool",
         ONE, input=INPUT, given=[], when=decide(0, {"tool": "search", "input": [1]}),
         events=[("TaskFailed", {"index": 0, "error_type": OUTPUT_ERROR,
                                 "error": has("the input of tool search must be an object, "
                                              "not an array")}),
                 ("NodeFinished", {"status": "failed"}),
                 ("NodeFinished", {"node": "after"}), ("WorkflowFailed", {})]),
    Case("a decision with a key it does not know fails the decide attempt",
         RETRYING, input=INPUT, given=[], when=decide(0, {"finish": 1, "why": "x"}),
         events=[("TaskFailed", {"index": 0, "error_type": OUTPUT_ERROR,
                                 "error": has("unknown key 'why'")}),
                 ("TimerScheduled", {"timer_id": "retry:l[0]:2"})]),
    Case("the retried decide gets the same input and may decide well",
         RETRYING, input=INPUT, given=[decide(0, {"tool": "shell"}),
                                       fired("retry:l[0]:2", T0 + 1100)],
         when=decide(0, SEARCH, attempt=2, at=T0 + 1200),
         events=[("TaskSucceeded", {"attempt": 2}), ("LoopStepDecided", {"step": 0}),
                 ("TaskDispatched", {"index": 1})]),
    Case("an unfit decision on the last attempt fails the loop",
         ONE, input=INPUT, given=[], when=decide(0, "search"),
         events=[("TaskFailed", {"error_type": OUTPUT_ERROR}),
                 ("NodeFinished", {"status": "failed",
                                   "error": has(OUTPUT_ERROR, "returned str",
                                                "decide of step 0")}),
                 ("NodeFinished", {"node": "after"}), ("WorkflowFailed", {})]),
    Case("a duplicate of the tool's success changes nothing",
         ONE, input=INPUT, given=[*STEP_0], when=tool(0, ["doc 7"]), events=[]),
    Case("a decide success for a step not dispatched yet changes nothing",
         ONE, input=INPUT, given=[], when=decide(1, SEARCH), events=[]),
    Case("a loop as an error handler decides with the error as its input",
         spec(task("a", on_error="l"), loop(input={"why": "${error.message}"})),
         input=INPUT, given=[], when=fail("a", retryable=False),
         events=[("TaskFailed", {}), ("NodeFinished", {"node": "a", "status": "failed"}),
                 ("TaskDispatched", {"node": "l", "index": 0, "input": {
                     "input": {"why": "boom"},
                     "transcript": [], "step": 0, "tools": ["search", "read"],
                     "spent": 0.0}})]),
    Case("cancelling the workflow cancels the running tool",
         ONE, input=INPUT, given=[decide(0, SEARCH)], when=cancel(),
         events=[("TaskCancelled", {"index": 1}),
                 ("NodeFinished", {"node": "l", "status": "cancelled"}),
                 ("NodeFinished", {"node": "after", "status": "cancelled"}),
                 ("WorkflowCancelled", {})]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_loop_table(case: Case) -> None:
    check_case(case)


def _three_steps() -> list[ev.Input]:
    return [ev.WorkflowSubmitted("wf-1", ONE, INPUT, T0, "tenant-a"), *STEP_0, *STEP_1,
            decide(2, {"finish": "Nile", "spend": 1}), ok("after", "done", at=T0 + 400)]


def test_a_loop_that_finishes_in_three_steps() -> None:
    result = run(_three_steps())
    check_history(result.history, result.state)
    steps = result.bodies(ev.LoopStepDecided)
    assert [(s.step, s.tool, s.finish) for s in steps] == [(0, "search", False),
                                                           (1, "read", False), (2, "", True)]
    dispatched = [(d.index, d.task) for d in result.bodies(ev.TaskDispatched) if d.node == "l"]
    assert dispatched == [(0, "t.decide"), (1, "search"), (2, "t.decide"), (3, "t.read"),
                          (4, "t.decide")]
    assert result.state is not None
    node = result.state.nodes["l"]
    assert (node.steps, node.spent, node.transcript) == (3, 3.0, [ENTRY_0, ENTRY_1])
    assert result.state.outputs["l"] == "Nile"
    assert result.history[-1].body == ev.WorkflowSucceeded("wf-1", T0 + 400, {"after": "done"})


def test_a_loop_that_exhausts_max_steps_with_on_exhausted_finish() -> None:
    result = run([ev.WorkflowSubmitted("wf-1", FINISHING, INPUT, T0, "tenant-a"), *STEP_0,
                  *STEP_1])
    check_history(result.history, result.state)
    assert result.state is not None and result.state.status.value == "succeeded"
    assert result.state.outputs["l"] == {"finished": False, "transcript": [ENTRY_0, ENTRY_1]}
    assert result.history[-1].body == ev.WorkflowSucceeded(
        "wf-1", T0 + 200, {"l": {"finished": False, "transcript": [ENTRY_0, ENTRY_1]}})


def test_a_loop_that_spends_its_budget_stops() -> None:
    heavy = {"tool": "search", "input": {}, "spend": 2.5}
    result = run([ev.WorkflowSubmitted("wf-1", BUDGET, INPUT, T0, "tenant-a"),
                  decide(0, heavy), tool(0, "x"), decide(1, heavy), tool(1, "y")])
    check_history(result.history, result.state)
    assert result.types[-3:] == ["TaskSucceeded", "NodeFinished", "WorkflowFailed"]
    (finished,) = result.bodies(ev.NodeFinished)
    assert finished.error == "loop l: spent 5 of budget 5"
    assert len([d for d in result.bodies(ev.TaskDispatched) if d.node == "l"]) == 4


def test_the_decide_input_carries_the_spending_so_far() -> None:
    result = run([ev.WorkflowSubmitted("wf-1", BUDGET, INPUT, T0, "tenant-a"),
                  decide(0, {**SEARCH, "spend": 1.5}), tool(0, "x")])
    last = result.bodies(ev.TaskDispatched)[-1]
    assert (last.index, last.input["spent"], last.input["step"]) == (2, 1.5, 1)


def test_a_replayed_loop_gives_the_same_transcript() -> None:
    first, second = run(_three_steps()), run(_three_steps())
    assert first.history == second.history
    assert first.state is not None and second.state is not None
    assert first.state.nodes["l"].transcript == second.state.nodes["l"].transcript


def test_the_recorded_dispatch_inputs_do_not_change_as_the_transcript_grows() -> None:
    result = run(_three_steps())
    decides = [d for d in result.bodies(ev.TaskDispatched) if d.node == "l" and d.index % 2 == 0]
    assert [len(d.input["transcript"]) for d in decides] == [0, 1, 2]


@pytest.mark.parametrize(("decision", "fault"), [
    ({"tool": "search"}, None),
    ({"tool": "read", "input": {"doc": 1}, "spend": 0}, None),
    ({"tool": "read", "input": None}, None),
    ({"finish": None}, None),
    ({"finish": 1, "spend": 3.5}, None),
    ({"tool": "read", "input": [1, 2], "spend": 0},
     "the input of tool read must be an object, not an array"),
    ({"tool": "read", "input": "doc 1"}, "the input of tool read must be an object, not a string"),
    ({"finish": 1, "why": "x"},
     "unknown key 'why' (a finishing decision has finish and spend)"),
    ({"finish": 1, "spend": 3.5, "thought": "done"}, "unknown key 'thought'"),
    ({"finish": 1, "input": {}}, "unknown key 'input'"),
    ({"tool": "search", "input": {}, "finish_reason": "x"},
     "unknown key 'finish_reason' (a tool decision has tool, input and spend)"),
    (["search"], "returned list, not an object"),
    ({"tool": "search", "finish": 1}, "both 'tool' and 'finish'"),
    ({"input": {}}, "neither 'tool' nor 'finish'"),
    ({"tool": 3}, "picked tool 3, which is not one of its tools (search, read)"),
    ({"tool": "search", "spend": -1}, "spend must be a finite number of at least 0, not -1"),
    ({"finish": 1, "spend": True}, "spend must be a finite number of at least 0, not True"),
    ({"finish": 1, "spend": float("nan")}, "spend must be a finite number of at least 0"),
    ({"finish": 1, "spend": float("inf")}, "spend must be a finite number of at least 0"),
    ({"finish": 1, "spend": None},
     "spend must be a finite number of at least 0, not null (NaN and infinity arrive as "
     "null)"),
    ({"finish": 1, "spend": "10"}, "spend must be a finite number of at least 0, not '10'"),
])
def test_decision_faults_name_what_is_wrong(decision: Any, fault: str | None) -> None:
    from headwater.core.spec import parse_spec
    node = parse_spec(ONE).node("l")
    got = decision_fault(node, 4, decision)
    if fault is None:
        assert got is None
    else:
        assert got is not None and fault in got and got.startswith("loop l: step 4: decide")
