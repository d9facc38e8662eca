"""References in a node's limits (``concurrency.key``, ``rate_limit.key`` and
``rate_limit.units``) are checked when the spec is parsed, as its input's are: before,
a key naming no upstream node, ``${item}`` outside a map, or a text with a reference
inside it was accepted and failed every run at its first attempt. With a submission's
input, a key naming a missing input key is a fault of the submission (a 422 at the
gateway) for a node that certainly starts."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.core.spec import parse_spec
from headwater.core.spec.input_refs import input_faults
from headwater.errors import SpecError


def _doc(limits: dict[str, Any], **node: Any) -> dict[str, Any]:
    return {"name": "limited", "nodes": [
        {"id": "first", "task": "t.first"},
        {"id": "work", "task": "t.work", **node, **limits}]}


@pytest.mark.parametrize(("limits", "fault"), [
    ({"concurrency": {"key": "cust-${input.k}", "limit": 2}},
     "node 'work': concurrency: cust-${input.k}: malformed reference"),
    ({"concurrency": {"key": "${nodes.ghost.output}", "limit": 2}},
     "node 'work': concurrency: ${nodes.ghost.output}: unknown reference to node 'ghost'"),
    ({"concurrency": {"key": "${nodes.first.output}", "limit": 2}},
     "node 'work': concurrency: ${nodes.first.output}: node 'first' is not upstream"),
    ({"concurrency": {"key": "${item.model}", "limit": 2}},
     "node 'work': concurrency: ${item.model}: ${item} is only defined in a map node"),
    ({"rate_limit": {"key": "${custom.x}", "per_second": 5}},
     "node 'work': rate_limit: ${custom.x}: unknown reference root 'custom'"),
    ({"rate_limit": {"key": "openai", "per_second": 5, "units": "${item.tokens}"}},
     "node 'work': rate_limit: ${item.tokens}: ${item} is only defined in a map node"),
    ({"rate_limit": {"key": "openai", "per_second": 5, "units": "${error.message}"}},
     "node 'work': rate_limit: ${error.message}: ${error} is only defined"),
])
def test_a_bad_reference_in_a_limit_is_a_spec_fault(limits: dict[str, Any], fault: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(_doc(limits))
    assert any(f.startswith(fault) for f in caught.value.faults), caught.value.faults


def test_good_references_in_limits_parse() -> None:
    spec = parse_spec({"name": "limited", "nodes": [
        {"id": "first", "task": "t.first"},
        {"id": "work", "task": "t.work", "needs": ["first"],
         "concurrency": {"key": "${nodes.first.output.customer}", "limit": 2}},
        {"id": "each", "kind": "map", "task": "t.each", "over": "${input.items}",
         "concurrency": {"key": "${item.model}", "limit": 1},
         "rate_limit": {"key": "${input.api}", "per_minute": 100, "units": "${item.n}"}}]})
    assert [len(n.limits) for n in spec.nodes] == [0, 1, 2]


def test_a_limit_key_naming_a_missing_input_key_is_a_fault_of_the_submission() -> None:
    spec = parse_spec(_doc({"concurrency": {"key": "${input.customer}", "limit": 2}}))
    assert input_faults(spec, {"customer": "acme"}) == []
    (fault,) = input_faults(spec, {"custmer": "acme"})
    assert fault.startswith("node 'work': concurrency: ${input.customer}: the input has no "
                            "key 'customer'"), fault
