"""State-machine tables: error routes (``on_error``), ``continue_on_error`` and skipping.

The shape is A -> (B, C) -> D throughout, with B failing for good; H is B's handler.
"""

from __future__ import annotations

from typing import Any

import pytest
from machine_harness import (
    Case,
    check_case,
    fail,
    has,
    map_node,
    ok,
    run,
    spec,
    started,
    submit,
    task,
)

from headwater.core import events as ev
from headwater.core.status import NodeStatus

D_INPUT = {"b": "${nodes.b.output}", "c": "${nodes.c.output}"}


def shape(b_extra: dict[str, Any] | None = None, *extra_nodes: dict[str, Any],
          **top: Any) -> dict[str, Any]:
    """A -> (B, C) -> D, B with ``b_extra`` fields."""
    return spec(task("a"), task("b", "a", **(b_extra or {})), task("c", "a"),
                task("d", "b", "c", input=D_INPUT), *extra_nodes, **top)


PLAIN = shape()
ROUTED = shape({"on_error": "h"}, task("h", input={"why": "${error.message}",
                                                    "a": "${nodes.a.output}"}))
ROUTED_DEFAULT_INPUT = shape({"on_error": "h"}, task("h"), task("after_h", "h"))
CONTINUE_NODE = shape({"continue_on_error": True})
CONTINUE_FLOW = shape(continue_on_error=True)
B_FAILS = fail("b", retryable=False, error="bad row")
AFTER_A: list[ev.Input] = [ok("a", "A")]
B_ERROR = {"node": "b", "index": None, "attempts": 1, "type": "RuntimeError",
           "message": "bad row"}


def statuses(result: Any) -> dict[str, str]:
    return {k: n.status.value for k, n in result.state.nodes.items()}


CASES = [
    Case("no route: B fails, D is upstream_failed, C is cancelled, the workflow fails",
         PLAIN, given=[*AFTER_A, started("c")], when=B_FAILS,
         events=[("TaskFailed", {"node": "b"}),
                 ("NodeFinished", {"node": "b", "status": "failed", "error": has("bad row")}),
                 ("NodeFinished", {"node": "d", "status": "upstream_failed",
                                   "error": "needs b, which failed"}),
                 ("TaskCancelled", {"node": "c", "attempt": 1,
                                    "reason": has("workflow failed", "bad row")}),
                 ("NodeFinished", {"node": "c", "status": "cancelled"}),
                 ("WorkflowFailed", {"error": has("b failed after 1 attempt", "bad row")})],
         state={"status": "failed", "tasks.c.status": "cancelled", "timers": {}}),
    Case("on_error: B fails, H runs with the error, D is skipped at once",
         ROUTED, given=[*AFTER_A], when=B_FAILS,
         events=[("TaskFailed", {"node": "b"}),
                 ("NodeFinished", {"node": "b", "status": "failed"}),
                 ("TaskDispatched", {"node": "h", "input": {"why": "bad row", "a": "A"}}),
                 ("NodeFinished", {"node": "d", "status": "skipped",
                                   "error": "needs b, which failed"})],
         state={"status": "running", "nodes.c.status": "running", "nodes.h.status": "running",
                "nodes.b.failure": B_ERROR}),
    Case("on_error: C and H succeed, the workflow succeeds with D skipped",
         ROUTED, given=[*AFTER_A, B_FAILS, ok("c", "C")], when=ok("h", "handled"),
         events=[("TaskSucceeded", {"node": "h"}),
                 ("NodeFinished", {"node": "h", "status": "succeeded"}),
                 ("WorkflowSucceeded", {"output": {"d": None, "h": "handled"}})],
         state={"nodes.b.status": "failed", "nodes.d.status": "skipped",
                "nodes.c.status": "succeeded", "open_nodes": 0}),
    Case("on_error: a handler without input gets {error} and its dependents follow it",
         ROUTED_DEFAULT_INPUT, given=[*AFTER_A], when=B_FAILS,
         events=[("TaskFailed", {}), ("NodeFinished", {"node": "b"}),
                 ("TaskDispatched", {"node": "h", "input": {"error": B_ERROR}}),
                 ("NodeFinished", {"node": "d", "status": "skipped"})],
         state={"nodes.after_h.status": "pending"}),
    Case("on_error: the handler fails too, so the workflow fails",
         ROUTED, given=[*AFTER_A, B_FAILS, ok("c")], when=fail("h", retryable=False),
         events=[("TaskFailed", {"node": "h"}),
                 ("NodeFinished", {"node": "h", "status": "failed"}),
                 ("WorkflowFailed", {"error": has("h failed")})],
         state={"nodes.d.status": "skipped", "nodes.b.status": "failed"}),
    Case("on_error: B succeeds, so its handler is skipped and D runs",
         ROUTED, given=[*AFTER_A, ok("c", "C")], when=ok("b", "B"),
         events=[("TaskSucceeded", {"node": "b"}),
                 ("NodeFinished", {"node": "b", "status": "succeeded"}),
                 ("NodeFinished", {"node": "h", "status": "skipped",
                                   "error": "b did not fail"}),
                 ("TaskDispatched", {"node": "d", "input": {"b": "B", "c": "C"}})]),
    Case("continue_on_error on B: D runs with B's error in place of its output",
         CONTINUE_NODE, given=[*AFTER_A, ok("c", "C")], when=B_FAILS,
         events=[("TaskFailed", {"node": "b"}),
                 ("NodeFinished", {"node": "b", "status": "failed"}),
                 ("TaskDispatched", {"node": "d",
                                     "input": {"b": {"error": B_ERROR}, "c": "C"}})],
         state={"outputs.b": {"error": B_ERROR}, "status": "running"}),
    Case("continue_on_error for the flow: the same, and the workflow then succeeds",
         CONTINUE_FLOW, given=[*AFTER_A, ok("c", "C"), B_FAILS], when=ok("d", "D"),
         events=[("TaskSucceeded", {"node": "d"}), ("NodeFinished", {"node": "d"}),
                 ("WorkflowSucceeded", {"output": {"d": "D"}})],
         state={"nodes.b.status": "failed", "nodes.d.status": "succeeded"}),
    Case("continue_on_error: retries come first; only the last failure continues",
         shape({"continue_on_error": True, "retry": {"max_attempts": 2}}),
         given=[*AFTER_A], when=fail("b"),
         events=[("TaskFailed", {"attempt": 1}), ("TimerScheduled", {"attempt": 2})],
         state={"nodes.b.status": "running", "nodes.d.status": "pending"}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_routes_table(case: Case) -> None:
    check_case(case)


def test_every_node_ends_in_a_named_state_when_the_workflow_ends() -> None:
    named = {NodeStatus.SUCCEEDED, NodeStatus.FAILED, NodeStatus.SKIPPED,
             NodeStatus.UPSTREAM_FAILED, NodeStatus.CANCELLED}
    runs = [
        [submit(PLAIN), *AFTER_A, B_FAILS],
        [submit(ROUTED), *AFTER_A, B_FAILS, ok("c"), ok("h")],
        [submit(ROUTED), *AFTER_A, ok("b"), ok("c"), ok("d")],
        [submit(CONTINUE_FLOW), *AFTER_A, B_FAILS, ok("c"), ok("d")],
    ]
    for inputs in runs:
        result = run(inputs)
        assert result.state is not None and result.state.status.terminal
        assert {n.status for n in result.state.nodes.values()} <= named
        assert result.state.open_nodes == 0


def test_a_skip_cascades_down_a_long_chain_without_recursion() -> None:
    n = 3000
    chain = [task("n0", on_error="h"), task("h"),
             *(task(f"n{i}", f"n{i - 1}") for i in range(1, n))]
    result = run([submit(spec(*chain)), fail("n0", retryable=False), ok("h")])
    assert result.state is not None
    assert result.state.status.value == "succeeded"
    assert all(result.state.nodes[f"n{i}"].status is NodeStatus.SKIPPED for i in range(1, n))


MAP_CONTINUE = spec(map_node("m", "${input.xs}", continue_on_error=True, max_concurrency=2),
                    task("after", "m", input="${nodes.m.output}"))
MAP_ROUTED = spec(map_node("m", "${input.xs}", on_error="h"), task("h"),
                  task("after", "m"))


def test_a_continue_on_error_map_runs_every_item_and_keeps_errors_in_order() -> None:
    result = run([submit(MAP_CONTINUE, {"xs": ["p", "q", "r"]}),
                  fail("m", index=1, retryable=False, error="q is bad"),
                  ok("m", "P", index=0), ok("m", "R", index=2)])
    assert result.state is not None
    (after,) = [d for d in result.bodies(ev.TaskDispatched) if d.node == "after"]
    error = {"node": "m", "index": 1, "attempts": 1, "type": "RuntimeError",
             "message": "q is bad"}
    assert after.input == ["P", {"error": error}, "R"]
    assert result.state.nodes["m"].status is NodeStatus.FAILED
    assert result.state.nodes["m"].error == "1 of 3 items of m failed"


def test_a_routed_map_cancels_its_unfinished_children_when_one_fails() -> None:
    result = run([submit(MAP_ROUTED, {"xs": [1, 2, 3]}), started("m", index=0),
                  fail("m", index=1, retryable=False)])
    assert result.state is not None
    cancelled = [(c.node, c.index) for c in result.bodies(ev.TaskCancelled)]
    assert cancelled == [("m", 0), ("m", 2)]
    assert result.state.nodes["m"].running == 0
    assert [d.node for d in result.bodies(ev.TaskDispatched)][-1] == "h"
    assert result.state.nodes["after"].status is NodeStatus.SKIPPED
    late = run([ok("m", "late", index=0)], result.state)
    assert late.types == ["ReportDiscarded"]
    assert "cancelled" in late.bodies(ev.ReportDiscarded)[0].reason
