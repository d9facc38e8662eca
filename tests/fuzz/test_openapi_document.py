"""The gateway's OpenAPI document describes what the fuzzer needs to generate cases:
request bodies, the workflow id's form, and problem documents for the errors.

Before ``services/gateway/openapi/bodies.py`` the routes read their bodies themselves and the
document had none: schemathesis generated no body for ``POST /v1/workflows`` or for a
cancel, and no schema-violating case for any path parameter.
"""

from __future__ import annotations

import datetime
from typing import Any

import httpx
import orjson
import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.core.failures import FailureGroup
from schemathesis.core.result import Ok

from headwater.topics import WORKFLOW_ID_PATTERN
from services.gateway.app import create_app
from services.gateway.edge.problems import NOT_FOUND, PROBLEM_JSON
from services.gateway.settings import Settings

DOC: dict[str, Any] = create_app().openapi()


def test_submission_and_cancel_bodies_are_described() -> None:
    submit = DOC["paths"]["/v1/workflows"]["post"]["requestBody"]
    body = submit["content"]["application/json"]["schema"]
    assert submit["required"] is True and "required" not in body
    assert body["oneOf"] == [{"required": ["workflow"]}, {"required": ["definition"]}]
    assert body["properties"]["queue_anyway"]["type"] == "boolean"
    responses = DOC["paths"]["/v1/workflows"]["post"]["responses"]
    assert "queue_anyway" in responses["400"]["description"]
    assert "maxdepth" in responses["429"]["description"]
    assert PROBLEM_JSON in responses["429"]["content"]
    node = body["properties"]["workflow"]["properties"]["nodes"]["items"]
    assert node["required"] == ["id"]  # what else a node needs depends on its kind
    assert "allOf" in node
    cancel = DOC["paths"]["/v1/workflows/{workflow_id}/cancel"]["post"]["requestBody"]
    assert cancel["required"] is False
    assert "reason" in cancel["content"]["application/json"]["schema"]["properties"]


def test_errors_are_problem_documents_and_ids_have_their_form() -> None:
    get = DOC["paths"]["/v1/workflows/{workflow_id}"]["get"]
    assert get["parameters"][0]["schema"]["pattern"] == WORKFLOW_ID_PATTERN
    for status in ("404", "503"):
        assert PROBLEM_JSON in get["responses"][status]["content"]
    assert "422" in DOC["paths"]["/v1/workflows"]["post"]["responses"]


@pytest.mark.parametrize(("path", "method"), [
    ("/v1/workflows", "POST"), ("/v1/workflows/{workflow_id}/cancel", "POST"),
    ("/v1/workflows/{workflow_id}", "GET"),
])
@pytest.mark.parametrize("mode", list(GenerationMode))
def test_schemathesis_generates_cases_of_both_kinds(path: str, method: str,
                                                     mode: GenerationMode) -> None:
    operation = schemathesis.openapi.from_dict(DOC)[path][method]
    seen: list[Any] = []

    @settings(max_examples=5, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def collect(case: Any) -> None:
        seen.append(case)

    collect()
    assert seen, f"no {mode.value} case of {method} {path}"
    if method == "POST" and mode is GenerationMode.POSITIVE:
        assert any(c.body is not None for c in seen)


def test_what_the_gateway_takes_is_not_described_as_invalid() -> None:
    """``python -m fuzzer`` sent ``"tenant": null`` and nodes with
    ``"max_concurrency": null`` as schema-violating cases and got 202: ``id`` and
    ``tenant`` may be null (``models.SubmitRequest``), and so may a spec's optional
    fields, whose null means absent (``headwater.core.spec``)."""
    body = DOC["paths"]["/v1/workflows"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]["properties"]
    assert "null" in body["id"]["type"] and "null" in body["tenant"]["type"]
    node = body["workflow"]["properties"]["nodes"]["items"]["properties"]
    for name in ("max_concurrency", "continue_on_error", "timeout", "retry"):
        assert {"type": "null"} in node[name]["anyOf"], name
    assert "anyOf" not in node["kind"] and "anyOf" not in node["needs"], "null is a fault"


def test_schemathesis_reads_every_operation_and_checks_answers_by_problem_type() -> None:
    """The problem types are components referred to by ``$ref`` and told apart by
    ``type`` (a discriminator): schemathesis resolves both, takes the gateway's own
    answer and refuses one whose type the operation does not answer."""
    schema = schemathesis.openapi.from_dict(DOC)
    loaded = list(schema.get_all_operations())
    assert loaded and all(isinstance(r, Ok) for r in loaded)
    unreachable = Settings(bootstrap="127.0.0.1:9", pg_dsn="postgresql://postgres@127.0.0.1:9/x")
    with TestClient(create_app(unreachable)) as client:
        answer = client.get("/v1/workflows/wf-1")  # not connected: 503 not-ready
    operation = schema["/v1/workflows/{workflow_id}"]["GET"]
    assert answer.status_code == 503
    operation.validate_response(answer)
    forged = httpx.Response(503, content=orjson.dumps({**answer.json(), "type": NOT_FOUND.uri}),
                            headers={"content-type": PROBLEM_JSON}, request=answer.request)
    forged.elapsed = datetime.timedelta(0)
    with pytest.raises(FailureGroup) as refused:
        operation.validate_response(forged)
    assert "DiscriminatorMismatch" in {type(e).__name__ for e in refused.value.exceptions}
