"""Spec faults that name a misspelt node, field or kind suggest the closest names, and a
reference to a node that is not upstream says whose needs to add it to."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.core.spec import parse_spec
from headwater.errors import SpecError


def node(node_id: str, *needs: str, **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "task": f"t.{node_id}", "needs": list(needs), **extra}


def doc(*nodes: Any, **top: Any) -> dict[str, Any]:
    return {"name": "wf", "nodes": list(nodes), **top}


def faults_of(document: Any) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_spec(document)
    return info.value.faults


TABLE: list[tuple[str, dict[str, Any], list[str]]] = [
    ("needs a misspelt node", doc(node("count"), node("b", "cuont")),
     ["node 'b': needs unknown node 'cuont' (did you mean 'count'?)"]),
    ("on_error to a misspelt node", doc(node("a", on_error="handel"), node("handle")),
     ["node 'a': on_error names unknown node 'handel' (did you mean 'handle'?)"]),
    ("a reference to a misspelt node", doc(node("count"), node("b", "count",
                                                             input="${nodes.cuont.output}")),
     ["node 'b': input: ${nodes.cuont.output}: unknown reference to node 'cuont' (did you "
      "mean 'count'?)"]),
    ("output naming a misspelt node", doc(node("count"), output="${nodes.conut.output}"),
     ["output: ${nodes.conut.output}: unknown reference to node 'conut' (did you mean "
      "'count'?)"]),
    ("nothing close: no suggestion", doc(node("a", "zzz")), ["node 'a': needs unknown node 'zzz'"]),
    ("a misspelt node field", doc(node("a", tiemout=3)),
     ["node 'a': unknown field 'tiemout' (did you mean 'timeout'?)"]),
    ("a misspelt field of the node's kind",
     {"name": "wf", "nodes": [{"id": "s", "kind": "sleep", "durration": 3}]},
     ["node 's': unknown field 'durration' (did you mean 'duration'?)",
      "node 's': a sleep needs exactly one of 'duration' (seconds) and 'until' (an instant)"]),
    ("a misspelt spec field", doc(node("a"), ouput="${nodes.a.output}"),
     ["unknown field 'ouput' (did you mean 'output'?); expected one of ['continue_on_error', "
      "'deadline', 'heartbeat_timeout', 'labels', 'max_restarts', 'name', 'nodes', "
      "'output', 'priority', 'restart_on_failure', 'retry', 'timeout']"]),
    ("a misspelt kind", doc(node("a", kind="tsak")),
     ["node 'a': kind must be one of ['task', 'map', 'wait', 'sleep', 'workflow', 'loop', "
      "'schedule', 'code'] (did you mean 'task'?)"]),
    # The node is declared but refused for its own fault: a link to it is no second fault.
    ("needs a node refused for its kind", doc(node("a", kind="tsak"),
                                              node("b", "a", input="${nodes.a.output}")),
     ["node 'a': kind must be one of ['task', 'map', 'wait', 'sleep', 'workflow', 'loop', "
      "'schedule', 'code'] (did you mean 'task'?)"]),
    ("a reference not upstream", doc(node("a"), node("b", over="${nodes.a.output}",
                                                     kind="map")),
     ["node 'b': over: ${nodes.a.output}: node 'a' is not upstream: add 'a' to the needs "
      "of node 'b'"]),
    ("a handler's reference not upstream of its source",
     doc(node("a"), node("b", on_error="h"), node("h", input="${nodes.a.output}")),
     ["node 'h': input: ${nodes.a.output}: node 'a' is not upstream of 'b', whose errors "
      "this node handles: add 'a' to the needs of node 'b'"]),
]


@pytest.mark.parametrize(("label", "document", "expected"), TABLE, ids=[r[0] for r in TABLE])
def test_faults_name_the_closest_names(label: str, document: dict[str, Any],
                                       expected: list[str]) -> None:
    assert faults_of(document) == expected
