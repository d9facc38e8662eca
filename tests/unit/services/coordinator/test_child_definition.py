"""A child's submission carries the definition its node named (``records.encode_outputs``
builds ``ChildSubmitted`` from the dispatch and the node's ``ChildSpec``), and the
table keeps a run's definition (``snapshot``: whole and split layouts)."""

from __future__ import annotations

from typing import Any

from headwater import codec
from headwater.core import events as ev
from headwater.core.machine import step
from headwater.topics import Topics
from services.coordinator.layout import dump_definition, dump_header, dump_task, load_split
from services.coordinator.records import encode_outputs
from services.coordinator.snapshot import dump_state, load_state

TOPICS = Topics("unit-child-definition")
AT = 1_700_000_000_000
KID = {"name": "kid", "nodes": [{"id": "x", "task": "t.x"}]}


def _children(node: dict[str, Any]) -> list[ev.ChildSubmitted]:
    parent = {"name": "p", "nodes": [{"id": "c", "kind": "workflow", "workflow": KID, **node}]}
    result = step(None, ev.WorkflowSubmitted("p", parent, None, AT, "team"))
    out = encode_outputs(TOPICS, result.events, 1_000_000, result.state)
    return [codec.decode(o.value) for o in out if o.topic == TOPICS.submissions]


def test_a_child_of_a_resolved_definition_names_it() -> None:
    (child,) = _children({"definition": "kid@4", "definition_version": 4})
    assert child == ev.ChildSubmitted("p:c:1", "p", "c", None, 1, KID, None, AT, "team",
                                      definition="kid", definition_version=4)


def test_an_inline_child_names_no_definition() -> None:
    (child,) = _children({})
    assert (child.definition, child.definition_version) == (None, None)


def test_the_table_keeps_the_definition_in_both_layouts() -> None:
    submitted = ev.WorkflowSubmitted("wf", {"name": "n", "nodes": [{"id": "a", "task": "t"}]},
                                     None, AT, definition="billing", definition_version=9)
    state = step(None, submitted).state
    assert load_state(dump_state(state)) == state
    entries = {key: dump_task(state, key) for key in state.tasks}
    loaded = load_split(dump_header(state), dump_definition(state), entries.get)
    assert (loaded.definition, loaded.definition_version) == ("billing", 9)
    assert dump_state(loaded) == dump_state(state)


def test_a_definition_entry_without_a_definition_is_as_before() -> None:
    state = step(None, ev.WorkflowSubmitted("wf", KID, None, AT)).state
    assert b"definition" not in dump_definition(state)
    entries = {key: dump_task(state, key) for key in state.tasks}
    loaded = load_split(dump_header(state), dump_definition(state), entries.get)
    assert loaded.definition is None and loaded.definition_version is None
