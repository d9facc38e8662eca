"""``spec.input_refs``: the ``${input...}`` references an input cannot resolve, judged
only where they are certainly resolved once the nodes upstream succeed."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.core.refs import resolve
from headwater.core.spec import parse_spec
from headwater.core.spec.input_refs import input_faults
from headwater.errors import InputReferenceError


def node(node_id: str, *needs: str, **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "task": f"t.{node_id}", "needs": list(needs), **extra}


def faults(nodes: list[dict[str, Any]], workflow_input: Any, output: Any = None) -> list[str]:
    spec = parse_spec({"name": "wf", "nodes": nodes, "output": output})
    return input_faults(spec, workflow_input)


ORDER = {"count": 2, "order": {"id": 7, "lines": [1, 2, 3]}, "tags": [], "name": "x"}

TABLE: list[tuple[str, list[dict[str, Any]], Any, Any, list[str]]] = [
    ("a misspelt key", [node("a", input={"n": "${input.cuont}"})], ORDER, None,
     ["node 'a': input: ${input.cuont}: the input has no key 'cuont' (did you mean "
      "'count'?); it has count, name, order, tags"]),
    ("a nested key", [node("a", input="${input.order.idd}")], ORDER, None,
     ["node 'a': input: ${input.order.idd}: input.order has no key 'idd' (did you mean "
      "'id'?); it has id, lines"]),
    ("an index beyond a list", [node("a", input="${input.order.lines.3}")], ORDER, None,
     ["node 'a': input: ${input.order.lines.3}: input.order.lines is a list of 3 (indexes "
      "0 to 2), no item '3'"]),
    ("an empty list", [node("a", input="${input.tags.0}")], ORDER, None,
     ["node 'a': input: ${input.tags.0}: input.tags is an empty list, no item '0'"]),
    ("a step into a string", [node("a", input="${input.name.first}")], ORDER, None,
     ["node 'a': input: ${input.name.first}: input.name is a string, not an object with "
      "key 'first'"]),
    ("no input at all", [node("a", input="${input.x}")], None, None,
     ["node 'a': input: ${input.x}: the submission has no input (null), so no key 'x'"]),
    ("a map over an object", [node("m", kind="map", over="${input.order}", input="${item}")],
     ORDER, None,
     ["node 'm': over: ${input.order}: input.order is an object, not a list to fan out "
      "over"]),
    ("a map over a missing key", [node("m", kind="map", over="${input.items}")], ORDER, None,
     ["node 'm': over: ${input.items}: the input has no key 'items'; it has count, name, "
      "order, tags"]),
    ("the output", [node("a")], ORDER, {"id": "${input.order.ref}"},
     ["output: ${input.order.ref}: input.order has no key 'ref'; it has id, lines"]),
    ("a when of a node that starts", [node("a", when="${input.flag} == true")], ORDER, None,
     ["node 'a': when: ${input.flag}: the input has no key 'flag'; it has count, name, "
      "order, tags"]),
    ("the same reference twice is one fault", [node("a", input=["${input.x}", "${input.x}"])],
     {}, None, ["node 'a': input: ${input.x}: the input has no key 'x'; it is an empty object"]),
    # Not judged: resolution depends on more than the input.
    ("the input of a node behind a when", [
        node("a"), node("b", "a", when="${nodes.a.output} == 1", input="${input.x}")],
     {}, None, []),
    ("a node whose every need may be skipped", [
        node("b", when="${input.mode} == 'x'"), node("c", "b", input="${input.x}")],
     {"mode": "y"}, None, []),
    ("an error handler", [node("a", on_error="h"), node("h", input="${input.x}")], {}, None,
     []),
    ("a child workflow's own input", [{
        "id": "c", "kind": "workflow", "input": {"y": 1},
        "workflow": {"name": "child", "nodes": [node("k", input="${input.z}")]}}], {}, None,
     []),
    ("nodes and the whole input", [node("a"), node("b", "a", input={
        "o": "${nodes.a.output.q}", "all": "${input}"})], None, None, []),
    # A join of a node that may be skipped and one that is taken runs: judged.
    ("a join with a taken need", [
        node("b", when="${input.mode} == 'x'"), node("u"),
        node("j", "b", "u", input="${input.x}")], {"mode": "y"}, None,
     ["node 'j': input: ${input.x}: the input has no key 'x'; it has mode"]),
    ("everything resolves", [
        node("a", input={"c": "${input.count}", "l": "${input.order.lines.2}"}),
        node("m", kind="map", over="${input.order.lines}", input="${item}")],
     ORDER, "${input.name}", []),
]


@pytest.mark.parametrize(("label", "nodes", "workflow_input", "output", "expected"), TABLE,
                         ids=[r[0] for r in TABLE])
def test_input_faults(label: str, nodes: list[dict[str, Any]], workflow_input: Any,
                      output: Any, expected: list[str]) -> None:
    assert faults(nodes, workflow_input, output) == expected


@pytest.mark.parametrize("template", ["${input.cuont}", "${input.order.idd}",
                                      "${input.order.lines.3}", "${input.name.first}"])
def test_a_fault_is_what_the_run_would_fail_on(template: str) -> None:
    """The check follows the rules the run resolves by (``refs.step``)."""
    assert faults([node("a", input=template)], ORDER)
    with pytest.raises(InputReferenceError):
        resolve(template, ORDER, {})


LISTED = {"$blob": "sha256:" + "0e" * 32, "bytes": 300_000, "items": 4}
"""A list stored by reference, with its count."""


def test_what_lies_inside_a_value_stored_by_reference_is_not_judged() -> None:
    uncounted = {"$blob": LISTED["$blob"], "bytes": 300_000}
    assert faults([node("a", input={"t": "${input.doc.title}"})], {"doc": uncounted}) == []
    assert faults([node("m", kind="map", over="${input.docs}")], {"docs": LISTED}) == []


def test_an_over_stored_by_reference_without_a_count_is_a_fault() -> None:
    uncounted = {"$blob": LISTED["$blob"], "bytes": 300_000}
    assert faults([node("m", kind="map", over="${input.docs}")], {"docs": uncounted}) == [
        "node 'm': over: ${input.docs}: input.docs is stored by reference with no item "
        "count, not a list to fan out over"]
