"""A workflow node that names a registered definition (``headwater.core.kinds.workflow.records``):
valid once the gateway has resolved it (the inline ``workflow`` beside the name, and
``definition_version``), a spec fault while it has not."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.core.kinds.workflow.records import UNRESOLVED, ChildSpec
from headwater.core.spec import parse_spec
from headwater.errors import SpecError

CHILD = {"name": "child", "nodes": [{"id": "x", "task": "t.x"}]}


def parent(**child: Any) -> dict[str, Any]:
    return {"name": "p", "nodes": [{"id": "c", "kind": "workflow", **child}]}


def faults_of(document: Any) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_spec(document)
    return info.value.faults


@pytest.mark.parametrize(("fields", "want"), [
    ({"definition": "billing", "definition_version": 3},
     ChildSpec(CHILD, "billing", 3)),
    ({"definition": "billing@3", "definition_version": 3}, ChildSpec(CHILD, "billing", 3)),
    ({"definition": "billing@3"}, ChildSpec(CHILD, "billing", 3)),
    ({"definition": "billing"}, ChildSpec(CHILD, "billing", None)),
    ({}, ChildSpec(CHILD, None, None)),
])
def test_a_resolved_definition_beside_its_inline_spec_is_valid(
        fields: dict[str, Any], want: ChildSpec) -> None:
    assert parse_spec(parent(workflow=CHILD, **fields)).node("c").child == want


@pytest.mark.parametrize("ref", ["billing", "billing@3"])
def test_a_definition_without_its_inline_spec_is_a_fault(ref: str) -> None:
    assert faults_of(parent(definition=ref)) == [f"node 'c': definition: {UNRESOLVED}"]
    assert UNRESOLVED == ("definition references are resolved by the gateway: submit "
                          "through HTTP, or give the child inline")


@pytest.mark.parametrize(("fields", "fault"), [
    ({"definition": "billing@3", "definition_version": 4},
     "node 'c': definition 'billing@3' names version 3, definition_version 4"),
    ({"definition": "billing", "definition_version": 0},
     "node 'c': definition_version must be an integer from 1 to 2147483647"),
    ({"definition": "billing", "definition_version": "3"},
     "node 'c': definition_version must be an integer from 1 to 2147483647"),
    ({"definition": "billing", "definition_version": True},
     "node 'c': definition_version must be an integer from 1 to 2147483647"),
    ({"definition_version": 3}, "node 'c': definition_version needs 'definition'"),
    ({"definition": "billing@0"}, "node 'c': definition must be a definition's name, or "
                                  "name@version"),
    ({"definition": "bill ing"}, "node 'c': definition must be a definition's name"),
    ({"definition": ""}, "node 'c': definition must be a definition's name"),
    ({"definition": 7}, "node 'c': definition must be a definition's name"),
    ({"definition": "billing@9999999999"}, "node 'c': definition: a version is at most "
                                           "2147483647"),
])
def test_a_malformed_definition_is_named(fields: dict[str, Any], fault: str) -> None:
    faults = faults_of(parent(workflow=CHILD, **fields))
    assert len(faults) == 1 and faults[0].startswith(fault), faults


def test_a_definition_version_on_another_kind_of_node_is_a_fault() -> None:
    doc = {"name": "p", "nodes": [{"id": "a", "task": "t.a", "definition_version": 1}]}
    assert faults_of(doc) == ["node 'a': 'definition_version' does not apply to a task node"]


@pytest.mark.parametrize("name", ["a\x00b", "a/b", "x\u202ey", "-a", "a" * 101])
def test_a_child_definition_name_follows_the_registrys_rule(name: str) -> None:
    from headwater.core.spec import parse_spec
    from headwater.errors import SpecError

    child = {"name": "c", "nodes": [{"id": "t", "task": "t"}]}
    spec = {"name": "p", "nodes": [{"id": "c", "kind": "workflow", "definition": name,
                                    "workflow": child}]}
    with pytest.raises(SpecError, match=r"definition name .* is invalid"):
        parse_spec(spec)
