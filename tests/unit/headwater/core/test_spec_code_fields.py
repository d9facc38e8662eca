"""A code node's ``code_version`` and ``path``: what the definition of an announced
``@workflow`` records (the code a run started on, the path the gateway serves it at)."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.core.spec import parse_spec
from headwater.errors import SpecError


def code_spec(**fields: Any) -> dict[str, Any]:
    return {"name": "r", "nodes": [{"id": "main", "kind": "code", "task": "r", **fields}]}


def test_a_code_node_records_its_code_version_and_path() -> None:
    code = parse_spec(code_spec(code_version="3f2a", path="/research/v2")).nodes[0].code
    assert code is not None and (code.code_version, code.path) == ("3f2a", "/research/v2")
    bare = parse_spec(code_spec()).nodes[0].code
    assert bare is not None and (bare.code_version, bare.path) == (None, None)


@pytest.mark.parametrize(("fields", "fault"), [
    ({"code_version": ""}, "code_version must be a string of 1 to 200 characters"),
    ({"code_version": "x" * 201}, "code_version must be a string of 1 to 200"),
    ({"code_version": 3}, "code_version must be a string"),
    ({"path": "/v1/run/x"}, "path '/v1/run/x' must start with / (not /v1/)"),
    ({"path": "research"}, "path 'research' must start with /"),
    ({"path": "/a b"}, "path '/a b' must start with /"),
])
def test_a_bad_code_version_or_path_is_named(fields: dict[str, Any], fault: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(code_spec(**fields))
    assert any(fault in f for f in caught.value.faults), caught.value.faults


def test_only_a_code_node_takes_them() -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec({"name": "t", "nodes": [{"id": "a", "task": "t", "path": "/a"}]})
    assert "path" in str(caught.value.faults)
