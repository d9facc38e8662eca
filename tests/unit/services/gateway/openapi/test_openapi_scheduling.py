"""The documented schemas of a run's priority and of a node's ``concurrency``,
``rate_limit`` and ``requires`` (``openapi.scheduling``) take every value the gateway
takes (the submission's model, the schedule's, and the spec parser), so a submission
the gateway accepts is never documented as invalid; and they refuse what the core
refuses where a schema can say it."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest
from gateway_harness import UNREACHABLE
from pydantic import ValidationError

from headwater.core.spec import SpecError, parse_spec
from services.gateway.app import create_app
from services.gateway.runs.models import SubmitRequest
from services.gateway.schedules.generations import ScheduleRequest

DOC: dict[str, Any] = create_app(UNREACHABLE).openapi()


def _body_schema(path: str, method: str) -> Any:
    schema = DOC["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
    return jsonschema_rs.Draft202012Validator(
        {"allOf": [schema], "components": DOC["components"]})


SUBMIT = _body_schema("/v1/workflows", "post")
SCHEDULE = _body_schema("/v1/schedules/{name}", "put")


def _spec(priority: Any = None, **node: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": "s", "nodes": [
        {"id": "a", "task": "t", "input": {"n": "${input.n}"}, **node}]}
    if priority is not None:
        doc["priority"] = priority
    return doc


def _core_takes(doc: dict[str, Any]) -> bool:
    try:
        parse_spec(doc)
    except SpecError:
        return False
    return True


PRIORITIES = [0, 5, 9, "low", "normal", "high"]
NOT_PRIORITIES = [-1, 10, "urgent", True, "8", 7.5]


@pytest.mark.parametrize("priority", PRIORITIES)
def test_every_priority_the_gateway_takes_is_documented(priority: Any) -> None:
    spec = _spec(priority)
    assert _core_takes(spec)
    SubmitRequest.model_validate({"workflow": spec, "priority": priority})
    ScheduleRequest.model_validate({"cron": "* * * * *", "definition": "d",
                                    "priority": priority})
    assert SUBMIT.is_valid({"workflow": spec, "priority": priority})
    assert SCHEDULE.is_valid({"cron": "* * * * *", "definition": "d", "priority": priority})
    assert SUBMIT.is_valid({"workflow": {**spec, "priority": None}, "priority": None})


@pytest.mark.parametrize("priority", NOT_PRIORITIES)
def test_a_value_that_is_no_priority_is_refused_by_both(priority: Any) -> None:
    assert not _core_takes(_spec(priority))
    with pytest.raises(ValidationError):
        SubmitRequest.model_validate({"workflow": _spec(), "priority": priority})
    assert not SUBMIT.is_valid({"workflow": _spec(priority)})
    assert not SUBMIT.is_valid({"workflow": _spec(), "priority": priority})
    assert not SCHEDULE.is_valid({"cron": "* * * * *", "definition": "d",
                                  "priority": priority})


TAKEN: list[dict[str, Any]] = [
    {"concurrency": {"key": "${input.customer}", "limit": 2}},
    {"concurrency": {"key": "acme", "limit": 1_000_000}},
    {"concurrency": None, "rate_limit": None, "requires": None},
    {"rate_limit": {"key": "openai", "per_minute": 500}},
    {"rate_limit": {"key": "openai", "per_second": 5, "units": "${input.tokens}"}},
    {"rate_limit": {"key": "o", "limit": 90_000, "window_s": 0.5, "units": 3}},
    {"rate_limit": {"key": "o", "per_minute": 1, "per_second": None, "window_s": None}},
    {"rate_limit": {"key": "${input.model}", "limit": 1, "window_s": 86_400}},
    {"requires": ["gpu", "a100", "org/model:v2"]},
    {"requires": ["gpu"] * 13},  # a tag given twice counts once
    {"requires": ["gpu"], "concurrency": {"key": "k", "limit": 3},
     "rate_limit": {"key": "k", "per_minute": 60}},
    {"cache": {"key": "${input.doc}", "ttl": "7d"}},
    {"cache": {"ttl": 0.5}},
    {"cache": {"key": "embed-v2", "ttl": " 12 h "}},
    {"cache": {}},
    {"cache": None},
]
REFUSED: list[dict[str, Any]] = [
    {"concurrency": {"key": "acme"}},
    {"concurrency": {"key": "acme", "limit": 0}},
    {"concurrency": {"key": "", "limit": 2}},
    {"concurrency": {"key": "acme", "limit": 2, "window_s": 1}},
    {"concurrency": "acme"},
    {"rate_limit": {"per_minute": 500}},
    {"rate_limit": {"key": "o", "per_minute": 0}},
    {"rate_limit": {"key": "o", "per_minute": 5, "units": 0}},
    {"rate_limit": {"key": "o", "per_minute": 5, "units": "many"}},
    {"rate_limit": {"key": "o", "limit": 5, "window_s": 0}},
    {"rate_limit": {"key": "o", "per_minute": 5, "burst": 2}},
    {"requires": []},
    {"requires": ["a b"]},
    {"cache": {"key": ""}},
    {"cache": {"key": "k", "ttl": "7 days"}},
    {"cache": {"key": "k", "ttl": 0}},
    {"cache": {"key": "k", "expires": 3}},
    {"cache": "k"},
]


@pytest.mark.parametrize("fields", TAKEN)
def test_every_limit_and_selector_the_gateway_takes_is_documented(
        fields: dict[str, Any]) -> None:
    spec = _spec(**fields)
    assert _core_takes(spec)
    errors = [f"{e.instance_path}: {e.message}"
              for e in SUBMIT.iter_errors({"workflow": spec, "queue_anyway": True})]
    assert errors == []


@pytest.mark.parametrize("fields", REFUSED)
def test_a_limit_or_selector_the_schema_can_tell_wrong_is_refused_by_both(
        fields: dict[str, Any]) -> None:
    spec = _spec(**fields)
    assert not _core_takes(spec)
    assert not SUBMIT.is_valid({"workflow": spec})


def test_each_field_is_described_with_examples() -> None:
    spec = DOC["paths"]["/v1/workflows"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]["properties"]["workflow"]
    node = spec["properties"]["nodes"]["items"]["properties"]
    fields = {"priority": spec["properties"]["priority"], **{
        name: node[name] for name in ("concurrency", "rate_limit", "requires", "cache")}}
    for name, field in fields.items():
        documented = field["anyOf"][0]  # or null: absent
        assert documented["description"] and documented["examples"], name
        assert field["anyOf"][1] == {"type": "null"}, name
