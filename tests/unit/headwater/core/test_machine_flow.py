"""State-machine tables: dependencies, maps and references (``headwater.core.machine.step``)."""

from __future__ import annotations

import pytest
from machine_harness import (
    T0,
    Case,
    check_case,
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

ROOTS = spec(task("a", input={"q": "${input.q}", "k": [1, "${input.k}"]}), task("b", "a"))
DIAMOND = spec(
    task("a"),
    task("b", "a"),
    task("c", "a"),
    task("d", "b", "c", input={"b": "${nodes.b.output}", "c": "${nodes.c.output}"}),
)

# src emits a list; m fans out over it; fan gets m's output (the fan-in).
FAN = spec(
    task("src"),
    map_node("m", "${nodes.src.output}", "src"),
    task("fan", "m", input={"all": "${nodes.m.output}"}),
)
FAN_2 = spec(
    task("src"),
    map_node("m", "${nodes.src.output}", "src", max_concurrency=2),
    task("fan", "m", input={"all": "${nodes.m.output}"}),
)
INPUT_MAP = spec(map_node("m", "${input.items}"), task("fan", "m", input="${nodes.m.output}"))

BAD_REF = spec(
    task("a"),
    task("b", "a", input={"x": "${nodes.a.output.missing}"}),
    task("c", "b"),
)

CASES = [
    Case(
        "submission dispatches the roots only, with resolved input",
        ROOTS, given=[], when=submit(ROOTS, {"q": "ünï", "k": {"n": 2}}), submit=False,
        events=[
            ("WorkflowAccepted", {"spec": ROOTS, "input": {"q": "ünï", "k": {"n": 2}},
                                  "tenant": "tenant-a", "at_ms": T0}),
            ("TaskDispatched", {"node": "a", "index": None, "attempt": 1, "task": "t.a",
                                "queue": "cpu", "input": {"q": "ünï", "k": [1, {"n": 2}]},
                                "at_ms": T0, "timeout_s": None}),
        ],
        state={"status": "running", "nodes.a.status": "running", "nodes.b.status": "pending",
               "tasks.a.status": "dispatched", "open_nodes": 2, "seq": 2, "name": "t"},
    ),
    Case(
        "diamond: B succeeds while C runs: D waits",
        DIAMOND, given=[ok("a", 1)], when=ok("b", "B"),
        events=[("TaskSucceeded", {"node": "b", "output": "B"}),
                ("NodeFinished", {"node": "b", "status": "succeeded"})],
        state={"nodes.d.status": "pending", "outputs.b": "B", "open_nodes": 2},
    ),
    Case(
        "diamond: B's success after C's dispatches D once, with both outputs",
        DIAMOND, given=[ok("a", 1), ok("c", "C")], when=ok("b", "B"),
        events=[("TaskSucceeded", {"node": "b"}),
                ("NodeFinished", {"node": "b", "status": "succeeded"}),
                ("TaskDispatched", {"node": "d", "attempt": 1, "input": {"b": "B", "c": "C"}})],
        state={"nodes.d.status": "running", "tasks.d.attempt": 1},
    ),
    Case(
        "diamond: B's TaskSucceeded delivered a second time records nothing",
        DIAMOND, given=[ok("a", 1), ok("c", "C"), ok("b", "B")], when=ok("b", "B"),
        events=[],
        state={"nodes.d.status": "running", "tasks.d.status": "dispatched"},
    ),
    Case(
        "diamond: D succeeds: the workflow succeeds with the sink's output",
        DIAMOND, given=[ok("a", 1), ok("c", "C"), ok("b", "B")], when=ok("d", {"x": [1, 2]}),
        events=[("TaskSucceeded", {"node": "d"}),
                ("NodeFinished", {"node": "d", "status": "succeeded"}),
                ("WorkflowSucceeded", {"output": {"d": {"x": [1, 2]}}})],
        state={"status": "succeeded", "open_nodes": 0, "output": {"d": {"x": [1, 2]}}},
    ),
    Case(
        "started and progress are recorded on the current attempt",
        DIAMOND, given=[started("a")],
        when=ev.TaskProgressed("wf-1", "a", None, 1, T0 + 60, 0.5, "half"),
        events=[("TaskProgressed", {"fraction": 0.5, "message": "half"})],
        state={"tasks.a.status": "running", "tasks.a.worker": "worker-1",
               "tasks.a.progress": 0.5, "tasks.a.message": "half"},
    ),
    Case(
        "map over []: succeeds at once, no child, the fan-in gets []",
        FAN, given=[], when=ok("src", []),
        events=[("TaskSucceeded", {"node": "src"}),
                ("NodeFinished", {"node": "src", "status": "succeeded"}),
                ("MapExpanded", {"node": "m", "count": 0}),
                ("NodeFinished", {"node": "m", "status": "succeeded"}),
                ("TaskDispatched", {"node": "fan", "index": None, "input": {"all": []}})],
        state={"nodes.m.status": "succeeded", "outputs.m": [], "nodes.m.total": 0},
    ),
    Case(
        "map over [] from the workflow input, at submission",
        INPUT_MAP, given=[], when=submit(INPUT_MAP, {"items": []}), submit=False,
        events=[("WorkflowAccepted", {}),
                ("MapExpanded", {"node": "m", "count": 0}),
                ("NodeFinished", {"node": "m", "status": "succeeded"}),
                ("TaskDispatched", {"node": "fan", "input": []})],
        state={"outputs.m": []},
    ),
    Case(
        "map over 5 with max_concurrency 2: only items 0 and 1 go out",
        FAN_2, given=[], when=ok("src", ["v", "w", "x", "y", "z"]),
        events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "src"}),
                ("MapExpanded", {"node": "m", "count": 5}),
                ("TaskDispatched", {"node": "m", "index": 0, "input": {"item": "v", "i": 0}}),
                ("TaskDispatched", {"node": "m", "index": 1, "input": {"item": "w", "i": 1}})],
        state={"nodes.m.running": 2, "nodes.m.next_index": 2, "nodes.m.status": "running"},
    ),
    Case(
        "map: item 1 finishing first frees one slot, for item 2",
        FAN_2, given=[ok("src", ["v", "w", "x", "y", "z"])], when=ok("m", "W", index=1),
        events=[("TaskSucceeded", {"index": 1}),
                ("TaskDispatched", {"node": "m", "index": 2, "input": {"item": "x", "i": 2}})],
        state={"nodes.m.running": 2, "nodes.m.done": 1,
               "nodes.m.results": [None, "W", None, None, None]},
    ),
    Case(
        "map: the last child finishes: results in input order, fan-in dispatched",
        FAN_2,
        given=[ok("src", [5, 4, 3]), ok("m", 40, index=1), ok("m", 30, index=2)],
        when=ok("m", 50, index=0),
        events=[("TaskSucceeded", {"index": 0}),
                ("NodeFinished", {"node": "m", "status": "succeeded"}),
                ("TaskDispatched", {"node": "fan", "input": {"all": [50, 40, 30]}})],
        state={"outputs.m": [50, 40, 30], "nodes.m.running": 0, "nodes.m.done": 3},
    ),
    Case(
        "map: a child's duplicate success records nothing",
        FAN_2, given=[ok("src", [1, 2, 3]), ok("m", "a", index=0)], when=ok("m", "a", index=0),
        events=[], state={"nodes.m.done": 1, "nodes.m.running": 2},
    ),
    Case(
        "map: 'over' that is not a list fails the node and the workflow",
        FAN, given=[], when=ok("src", {"not": "a list"}),
        events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "src"}),
                ("NodeFinished", {"node": "m", "status": "failed", "error": has("dict")}),
                ("NodeFinished", {"node": "fan", "status": "upstream_failed"}),
                ("WorkflowFailed", {"error": has("map m", "not a list")})],
        state={"status": "failed", "timers": {}},
    ),
    Case(
        "bad reference at run time fails the node and the workflow, naming the reference",
        BAD_REF, given=[], when=ok("a", {"present": 1}),
        events=[("TaskSucceeded", {}),
                ("NodeFinished", {"node": "a", "status": "succeeded"}),
                ("NodeFinished", {"node": "b", "status": "failed",
                                  "error": has("${nodes.a.output.missing}", "missing")}),
                ("NodeFinished", {"node": "c", "status": "upstream_failed",
                                  "error": has("b")}),
                ("WorkflowFailed", {"error": has("b", "${nodes.a.output.missing}")})],
        state={"status": "failed", "nodes.b.status": "failed", "open_nodes": 0,
               "error": has("${nodes.a.output.missing}")},
    ),
    Case(
        "bad reference in the output template fails the workflow",
        spec(task("a"), output={"r": "${nodes.a.output.nope}"}), given=[], when=ok("a", {}),
        events=[("TaskSucceeded", {}), ("NodeFinished", {"status": "succeeded"}),
                ("WorkflowFailed", {"error": has("output", "${nodes.a.output.nope}")})],
        state={"status": "failed"},
    ),
    Case(
        "the output template is resolved against node outputs and the input",
        spec(task("a"), output={"r": "${nodes.a.output.k}", "q": "${input}"}),
        input=[1], given=[], when=ok("a", {"k": "v"}),
        events=[("TaskSucceeded", {}), ("NodeFinished", {}),
                ("WorkflowSucceeded", {"output": {"r": "v", "q": [1]}})],
        state={"status": "succeeded", "output": {"r": "v", "q": [1]}},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_flow_table(case: Case) -> None:
    check_case(case)


def test_diamond_duplicate_success_dispatches_d_exactly_once() -> None:
    result = run([submit(DIAMOND), ok("a"), ok("b", "B"), ok("b", "B"), ok("c", "C"),
                  ok("b", "B"), ok("c", "C")])
    assert [d.node for d in result.bodies(ev.TaskDispatched)] == ["a", "b", "c", "d"]
    assert [len(s) for s in result.per_step][3] == 0  # the second delivery of b
    assert result.per_step[-2:] == [[], []]


def test_reference_with_a_unicode_digit_key_fails_the_workflow_not_the_step() -> None:
    doc = spec(task("a", input={"x": "${input.items.²}"}))
    result = run([submit(doc, {"items": [1, 2, 3]})])
    assert result.types == ["WorkflowAccepted", "NodeFinished", "WorkflowFailed"]
