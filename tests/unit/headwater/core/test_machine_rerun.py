"""Reruns in the core (``headwater/core/reuse.py``): nodes and map items whose outputs a
rerun takes from its source are not run again, the rest runs as in any run, and the
history folds to the same state."""

from __future__ import annotations

from typing import Any

from machine_harness import WF, Run, check_history, map_node, ok, run, spec, task

from headwater.core import events as ev
from headwater.core.status import NodeStatus, TaskStatus, WorkflowStatus
from services.coordinator.layout import dump_definition, dump_header, dump_task, load_split


def _rerun(doc: Any, inp: Any, rerun: Any) -> ev.WorkflowSubmitted:
    return ev.WorkflowSubmitted(WF, doc, inp, 1_000, "tenant-a", rerun=rerun)


def _types(done: Run) -> list[str]:
    return [e.type for e in done.history]


def _dispatched(done: Run) -> list[tuple[str, int | None]]:
    return [(e.body.node, e.body.index) for e in done.history
            if isinstance(e.body, ev.TaskDispatched)]


CHAIN = spec(task("a", input="${input.n}"), task("b", "a", input="${nodes.a.output}"),
             task("c", "b", input="${nodes.b.output}"))


def test_a_reused_node_does_not_run_and_its_dependents_see_its_output() -> None:
    done = run([_rerun(CHAIN, {"n": 1}, {"of": "wf-old", "reset": None,
                                          "nodes": {"a": {"x": 7}}, "items": {}})])
    assert _types(done)[:4] == ["WorkflowAccepted", "NodeReused", "NodeFinished",
                                "TaskDispatched"]
    assert _dispatched(done) == [("b", None)]
    dispatched = [e.body for e in done.history if isinstance(e.body, ev.TaskDispatched)]
    assert dispatched[0].input == {"x": 7}  # b's input is a's reused output
    assert done.state is not None and done.state.nodes["a"].status is NodeStatus.SUCCEEDED
    assert "a" not in done.state.tasks
    more = run([ok("b", 8), ok("c", 9)], done.state)
    assert more.state is not None and more.state.status is WorkflowStatus.SUCCEEDED
    assert more.state.output == {"c": 9}
    check_history(done.history + more.history, more.state)


def test_a_run_whose_every_node_is_reused_succeeds_at_once() -> None:
    done = run([_rerun(CHAIN, None, {"of": "wf-old", "nodes": {"a": 1, "b": 2, "c": 3}})])
    assert done.state is not None and done.state.status is WorkflowStatus.SUCCEEDED
    assert done.state.output == {"c": 3} and _dispatched(done) == []
    check_history(done.history, done.state)


MAP = spec(map_node("m", "${input.items}"), task("fan", "m", input={"all": "${nodes.m.output}"}))


def test_a_maps_reused_items_are_not_dispatched_and_keep_their_place() -> None:
    reused = {str(i): f"old{i}" for i in range(10) if i not in (3, 7)}
    done = run([_rerun(MAP, {"items": list(range(10))},
                       {"of": "wf-old", "nodes": {}, "items": {"m": reused}})])
    assert _dispatched(done) == [("m", 3), ("m", 7)]
    assert [e.body.index for e in done.history if isinstance(e.body, ev.TaskReused)] == [
        0, 1, 2, 4, 5, 6, 8, 9]
    assert done.state is not None
    node = done.state.nodes["m"]
    assert (node.done, node.running, node.next_index) == (8, 2, 10)
    assert done.state.tasks["m[0]"].status is TaskStatus.SUCCEEDED
    more = run([ok("m", "new3", index=3), ok("m", "new7", index=7)], done.state)
    assert _dispatched(more) == [("fan", None)]
    fan = next(e.body for e in more.history if isinstance(e.body, ev.TaskDispatched))
    assert fan.input == {"all": ["old0", "old1", "old2", "new3", "old4", "old5", "old6",
                                 "new7", "old8", "old9"]}
    check_history(done.history + more.history, more.state)


def test_the_table_keeps_a_reruns_reused_outputs() -> None:
    """The split layout rebuilds a reused node's output (no task entry holds it) and a
    reused item's (its task entry holds it) from what it stores."""
    done = run([_rerun(spec(task("a"), map_node("m", "${input.items}", "a"),
                            task("z", "m", input={"a": "${nodes.a.output}",
                                                  "m": "${nodes.m.output}"})),
                       {"items": [1, 2]},
                       {"of": "wf-old", "nodes": {"a": "A"}, "items": {"m": {"0": "M0"}}})])
    state = done.state
    assert state is not None
    entries = {k: dump_task(state, k) for k in state.tasks}
    back = load_split(dump_header(state), dump_definition(state), entries.get)
    assert back.outputs["a"] == "A" and back.nodes["m"].results == ["M0", None]
    assert back.rerun == state.rerun
    more = run([ok("m", "M1", index=1)], back)
    z = next(e.body for e in more.history if isinstance(e.body, ev.TaskDispatched))
    assert z.input == {"a": "A", "m": ["M0", "M1"]}


def test_a_malformed_rerun_fails_the_run_naming_the_fault() -> None:
    for bad, words in (("x", "must be an object"), ({"of": ""}, "rerun.of"),
                       ({"of": "s", "nodes": {"nope": 1}}, "'nope'"),
                       ({"of": "s", "items": {"a": {"0": 1}}}, "only a node with 'over'"),
                       ({"of": "s", "items": {"m": {"x": 1}}}, "item indexes"),
                       ({"of": "s", "items": {"m": {"\u0661": 1}}}, "item indexes"),
                       ({"of": WF}, "names the run itself"),
                       ({"of": "s", "extra": 1}, "unknown fields extra")):
        doc = spec(task("a"), map_node("m", "${input.items}"))
        done = run([_rerun(doc, {"items": []}, bad)])
        assert done.state is not None and done.state.status is WorkflowStatus.FAILED, bad
        assert "invalid rerun" in done.state.error and words in done.state.error, done.state.error
        check_history(done.history, done.state)
