"""Every request body and every answer of the OpenAPI document has an example, and every
example matches its schema (JSON Schema 2020-12, formats checked, with jsonschema-rs);
the request bodies' examples are also what the routes' models take, and their specs
what the spec parser takes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema_rs
import pytest
from gateway_harness import UNREACHABLE
from pydantic import BaseModel

from headwater.core.spec import parse_spec
from services.gateway.app import create_app
from services.gateway.control.models import CancelRequest, SignalRequest
from services.gateway.definitions.models import DefinitionRequest, RollbackRequest
from services.gateway.edge.problems import PROBLEM_JSON, PROBLEM_TYPES
from services.gateway.openapi.answers import ANSWERS
from services.gateway.openapi.document import operations, vacuous
from services.gateway.openapi.examples import ANSWER_EXAMPLES, REQUEST_EXAMPLES
from services.gateway.openapi.problem_examples import PROBLEM_EXAMPLES
from services.gateway.openapi.problems import component
from services.gateway.runs.models import SubmitRequest
from services.gateway.schedules.generations import ScheduleRequest

DOC: dict[str, Any] = create_app(UNREACHABLE).openapi()
OPERATIONS = dict(operations(DOC))
MODELS: dict[str, type[BaseModel]] = {
    "POST /v1/workflows": SubmitRequest,
    "POST /v1/workflows/{workflow_id}/cancel": CancelRequest,
    "POST /v1/workflows/{workflow_id}/signals/{name}": SignalRequest,
    "PUT /v1/definitions/{name}": DefinitionRequest,
    "POST /v1/definitions/{name}/rollback": RollbackRequest,
    "PUT /v1/schedules/{name}": ScheduleRequest,
}
"""The model each route parses its body with."""


def examples_of(media: dict[str, Any]) -> dict[str, Any]:
    """A media type's example values by name (``$ref``s to ``components.examples``
    followed)."""
    if "example" in media:
        return {"example": media["example"]}
    named = {}
    for name, example in media.get("examples", {}).items():
        if "$ref" in example:
            example = DOC["components"]["examples"][example["$ref"].rsplit("/", 1)[-1]]
        named[name] = example["value"]
    return named


def media_types() -> Iterator[tuple[str, dict[str, Any]]]:
    """``("<operation> <where> <media type>", media type object)`` of every request
    body and answer."""
    for label, operation in OPERATIONS.items():
        body = operation.get("requestBody", {}).get("content", {})
        for media, entry in body.items():
            yield f"{label} body {media}", entry
        for status, answer in operation["responses"].items():
            for media, entry in answer.get("content", {}).items():
                yield f"{label} {status} {media}", entry


def validator(schema: dict[str, Any]) -> Any:
    """A 2020-12 validator of ``schema`` whose ``#/components/...`` refs resolve in the
    document."""
    return jsonschema_rs.Draft202012Validator(
        {"allOf": [schema], "components": DOC["components"]}, validate_formats=True)


def test_every_body_and_answer_has_an_example() -> None:
    missing = [where for where, entry in media_types() if not examples_of(entry)]
    assert missing == []
    counted = sum(len(examples_of(entry)) for _, entry in media_types())
    assert counted >= 100, counted  # bodies, answers, and the problems of each operation


@pytest.mark.parametrize(("where", "entry"), list(media_types()),
                         ids=[where for where, _ in media_types()])
def test_every_example_matches_its_schema(where: str, entry: dict[str, Any]) -> None:
    schema = entry.get("schema")
    assert schema, f"{where} has no schema"
    check = validator(schema)
    for name, value in examples_of(entry).items():
        errors = [f"{e.instance_path}: {e.message}" for e in check.iter_errors(value)]
        assert errors == [], f"{where} example {name}"


def test_each_problem_type_has_an_example_that_matches_its_schema() -> None:
    assert set(PROBLEM_EXAMPLES) == {t.slug for t in PROBLEM_TYPES}
    for kind in PROBLEM_TYPES:
        value = DOC["components"]["examples"][component(kind)]["value"]
        check = validator({"$ref": f"#/components/schemas/{component(kind)}"})
        assert [e.message for e in check.iter_errors(value)] == [], kind.slug
        assert [t.slug for t in PROBLEM_TYPES if check.is_valid(
            DOC["components"]["examples"][component(t)]["value"])] == [kind.slug]


def test_an_example_that_does_not_match_is_found() -> None:
    entry = OPERATIONS["GET /v1/workflows/{workflow_id}"]["responses"]["200"]["content"][
        "application/json"]
    wrong = {**examples_of(entry)["example"], "status": "sleeping", "seq": -1}
    messages = sorted(e.message for e in validator(entry["schema"]).iter_errors(wrong))
    assert len(messages) == 2 and "-1 is less than the minimum of 0" in messages


def test_request_examples_are_what_the_routes_take() -> None:
    for label, model in MODELS.items():
        for name, value in examples_of(
                OPERATIONS[label]["requestBody"]["content"]["application/json"]).items():
            if label.startswith("PUT /v1/definitions") and "workflow" not in value:
                value = {"workflow": value}  # a bare spec
            model.model_validate(value)
            spec = value.get("workflow")
            if isinstance(spec, dict):
                parse_spec(spec)
            assert name


def test_the_examples_and_answers_name_operations_of_the_document() -> None:
    for table in (ANSWERS, ANSWER_EXAMPLES, REQUEST_EXAMPLES):
        assert set(table) - set(OPERATIONS) == set()
    for label, by_status in ANSWERS.items():
        for status, by_media in by_status.items():
            for media, schema in by_media.items():
                assert OPERATIONS[label]["responses"][status]["content"][media][
                    "schema"] == schema, f"{label} {status}: the route's own schema is used"
    assert vacuous({}) and vacuous({"type": "object"}) and not vacuous({"required": ["a"]})


def test_problem_answers_show_an_example_of_each_type_they_can_be() -> None:
    entry = OPERATIONS["POST /v1/workflows"]["responses"]["422"]["content"][PROBLEM_JSON]
    assert set(examples_of(entry)) == {
        "invalid-request", "invalid-workflow-spec", "workflow-spec-too-large",
        "invalid-definition-reference", "input-mismatch", "input-unresolved"}
