"""State-machine tables: a map over a list stored by reference (``headwater.blobs``),
and tasks selecting through a value stored by reference.

The coordinator never holds what a reference names: a list stored with its item count
(``items``) fans out that many children, each given the reference to its own item (a
path reference), and a selection through a reference is a reference with a path.
"""

from __future__ import annotations

import golden_codec as gc
import pytest
from machine_harness import Case, check_case, has, map_node, ok, replay, run, spec, submit, task

from headwater.blobs import make_ref
from headwater.core import events as ev

DIGEST = "sha256:" + "cd" * 32
LISTED = make_ref(DIGEST, 400_000, items=3)
"""A list of 3 items a worker stored by reference, with its count."""
UNCOUNTED = make_ref(DIGEST, 400_000)
"""A value stored by reference without a count (an object, or an older list)."""


def at(*path: str | int) -> dict[str, object]:
    """The reference to the part of the blob at ``path``."""
    return {"$blob": DIGEST, "bytes": 400_000, "path": list(path)}


TEXTS = spec(task("a"), task("m", "a", kind="map", over="${nodes.a.output}",
                             input={"text": "${item.text}", "i": "${index}"}))

CASES = [
    Case("a map over a list stored by reference fans out its items, each a path reference",
         spec(task("a"), map_node("m", "${nodes.a.output}", "a")),
         given=[], when=ok("a", LISTED),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("MapExpanded", {"count": 3}),
                 ("TaskDispatched", {"index": 0, "input": {"item": at(0), "i": 0}}),
                 ("TaskDispatched", {"index": 1, "input": {"item": at(1), "i": 1}}),
                 ("TaskDispatched", {"index": 2, "input": {"item": at(2), "i": 2}})]),
    Case("${item.text} of a map over a reference is the path to the item's field",
         TEXTS, given=[], when=ok("a", make_ref(DIGEST, 400_000, items=1)),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}), ("MapExpanded", {"count": 1}),
                 ("TaskDispatched", {"input": {"text": at(0, "text"), "i": 0}})]),
    Case("a map over an empty list stored by reference succeeds at once",
         spec(task("a"), map_node("m", "${nodes.a.output}", "a")),
         given=[], when=ok("a", make_ref(DIGEST, 2, items=0)),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("MapExpanded", {"count": 0}),
                 ("NodeFinished", {"node": "m", "status": "succeeded"}),
                 ("WorkflowSucceeded", {})]),
    Case("a map over a reference without an item count fails, saying why",
         spec(task("a"), map_node("m", "${nodes.a.output}", "a")),
         given=[], when=ok("a", UNCOUNTED),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("NodeFinished", {"node": "m", "status": "failed", "error": has(
                     "map m: ${nodes.a.output}: 'over' gave a value stored by reference "
                     "with no item count", DIGEST, "HEADWATER_BLOB_THRESHOLD_BYTES")}),
                 ("WorkflowFailed", {})]),
    Case("a map over a part of a stored value has no count either",
         spec(task("a"), map_node("m", "${nodes.a.output.docs}", "a")),
         given=[], when=ok("a", LISTED),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("NodeFinished", {"node": "m", "status": "failed",
                                   "error": has("a part of a stored value")}),
                 ("WorkflowFailed", {})]),
    Case("a task selecting through a reference gets the path reference",
         spec(task("a"), task("b", "a", input={"s": "${nodes.a.output.summary}"})),
         given=[], when=ok("a", UNCOUNTED),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("TaskDispatched", {"node": "b", "input": {"s": at("summary")}})]),
    Case("an inline field beside a reference is still selected inline",
         spec(task("a"), task("b", "a", input={"d": "${nodes.a.output.doc.title}",
                                                "n": "${nodes.a.output.n}"})),
         given=[], when=ok("a", {"doc": UNCOUNTED, "n": 2}),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("TaskDispatched", {"node": "b", "input": {"d": at("title"), "n": 2}})]),
    Case("an item count beyond any map (a forged reference) fails the node, and the "
         "coordinator allocates nothing for it",
         spec(task("a"), map_node("m", "${nodes.a.output}", "a")),
         given=[], when=ok("a", make_ref(DIGEST, 400_000, items=10**12)),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("NodeFinished", {"node": "m", "status": "failed", "error": has(
                     "map m: ${nodes.a.output}: 'over' gave 1000000000000 items, over the "
                     "most a node fans out over (1000000)")}),
                 ("WorkflowFailed", {})]),
    Case("an item count too large for an index fails the same way",
         spec(task("a"), map_node("m", "${nodes.a.output}", "a")),
         given=[], when=ok("a", make_ref(DIGEST, 400_000, items=2**63)),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("NodeFinished", {"node": "m", "status": "failed", "error": has(
                     "over the most a node fans out over")}),
                 ("WorkflowFailed", {})]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_map_by_reference_table(case: Case) -> None:
    result = check_case(case)
    assert gc.state_doc(replay(result.history)) == gc.state_doc(result.state)


def test_the_children_of_a_map_over_a_reference_run_to_its_fan_in() -> None:
    doc = spec(task("a"), map_node("m", "${nodes.a.output}", "a"),
               task("f", "m", input={"all": "${nodes.m.output}"}))
    outcome = run([submit(doc), ok("a", LISTED),
                   *(ok("m", {"n": i}, index=i) for i in range(3))])
    (fan_in,) = [b for b in outcome.bodies(ev.TaskDispatched) if b.node == "f"]
    assert fan_in.input == {"all": [{"n": 0}, {"n": 1}, {"n": 2}]}


def test_a_replay_gives_the_same_path_references() -> None:
    inputs = [submit(TEXTS), ok("a", LISTED)]
    first, second = run(inputs), run(inputs)
    assert first.history == second.history
    assert gc.state_doc(replay(first.history)) == gc.state_doc(first.state)
    assert [b.input["text"] for b in first.bodies(ev.TaskDispatched) if b.node == "m"] == [
        at(0, "text"), at(1, "text"), at(2, "text")]


def test_a_wide_map_over_a_reference_is_bounded_by_its_concurrency() -> None:
    doc = spec(task("a"), map_node("m", "${nodes.a.output}", "a", max_concurrency=2))
    outcome = run([submit(doc), ok("a", make_ref(DIGEST, 400_000, items=5_000))])
    items = [b for b in outcome.bodies(ev.TaskDispatched) if b.node == "m"]
    assert [b.input["item"] for b in items] == [at(0), at(1)]
    assert outcome.state is not None and outcome.state.nodes["m"].total == 5_000


def test_a_limit_key_through_a_reference_fails_the_item_as_a_bad_key() -> None:
    doc = spec(task("a"), map_node("m", "${nodes.a.output}", "a",
                                   concurrency={"key": "${item.user}", "limit": 2}))
    outcome = run([submit(doc), ok("a", LISTED)])
    assert outcome.state is not None and outcome.state.nodes["m"].status.value == "failed"
    (finished,) = [b for b in outcome.bodies(ev.NodeFinished) if b.node == "m"]
    assert "a limit's key must resolve to a text or a number, got dict" in finished.error
