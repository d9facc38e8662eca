"""A definition's input schema: which schemas are refused, and how an input that does not
match is answered (422 naming each field)."""

from __future__ import annotations

from typing import Any

import pytest

from services.gateway.definitions.registry import Resolved, check_input, schema_faults
from services.gateway.edge.problems import Problem

SPEC: dict[str, Any] = {"name": "greet", "nodes": [{"id": "a", "task": "t.a"}]}
SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["who"], "additionalProperties": False,
    "properties": {"who": {"type": "string", "minLength": 1},
                   "times": {"type": "integer", "minimum": 1},
                   "tags": {"type": "array", "items": {"type": "string"}}}}


@pytest.mark.parametrize("schema", [
    SCHEMA, {}, {"type": "string"},
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": {
        "n": {"type": "integer"}}, "properties": {"n": {"$ref": "#/$defs/n"}}},
])
def test_good_schemas(schema: dict[str, Any]) -> None:
    assert schema_faults(schema) == []


@pytest.mark.parametrize(("schema", "fault"), [
    (["not", "an", "object"], "input_schema: must be a JSON Schema object"),
    ({"type": "nope"}, "input_schema.type: "),
    ({"properties": {"a": {"pattern": "("}}}, "input_schema: \"(\" is not a \"regex\""),
    ({"required": "who"}, "input_schema.required: "),
    ({"$schema": "http://example.com/my-meta"}, "input_schema.$schema: "),
    ({"$ref": "http://example.com/remote.json"}, "not fetched"),
])
def test_bad_schemas_are_named(schema: Any, fault: str) -> None:
    faults = schema_faults(schema)
    assert len(faults) == 1 and fault in faults[0], faults


def resolved(schema: dict[str, Any] | None) -> Resolved:
    return Resolved("greet", 2, SPEC, schema)


def test_a_matching_input_passes_and_no_schema_takes_anything() -> None:
    check_input(resolved(SCHEMA), {"who": "ada", "times": 2, "tags": ["x"]})
    check_input(resolved(None), ["anything", 1, None])


def test_an_input_that_does_not_match_is_422_naming_each_field() -> None:
    with pytest.raises(Problem) as caught:
        check_input(resolved(SCHEMA), {"times": "2", "tags": ["x", 3], "extra": 1})
    problem = caught.value
    assert problem.status == 422
    errors = problem.extra["errors"]
    assert any(e.startswith("input: ") and "\"who\" is a required property" in e
               for e in errors), errors
    assert any(e.startswith("input.times: ") and "integer" in e for e in errors), errors
    assert any(e.startswith("input.tags[1]: ") for e in errors), errors
    assert any("extra" in e for e in errors), errors
    assert "greet@2" in problem.detail
    assert problem.extra["definition"] == "greet" and problem.extra["version"] == 2


def test_an_input_that_is_not_even_an_object() -> None:
    with pytest.raises(Problem) as caught:
        check_input(resolved(SCHEMA), None)
    assert caught.value.extra["errors"] == ["input: null is not of type \"object\""]
