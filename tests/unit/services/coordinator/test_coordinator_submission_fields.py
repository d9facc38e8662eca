"""A submission's tenant and definition are checked as the coordinator decodes it, Avro
and JSON alike (``inputs.submission_fault``): a bad one is a ``DecodeError`` (a dead
letter with the reason), so the projection never indexes a value it cannot hold."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
import pytest

from headwater import codec
from headwater.core import events as ev
from headwater.errors import DecodeError
from headwater.topics import Topics
from services.coordinator.inputs import decode_input

MAX_TENANT_CHARS = 200

TOPICS = Topics("unit-8")
WF = "wf-1"
AT = 1_700_000_000_000
SPEC = {"name": "s", "nodes": []}
JSON_HEADERS = [("content-type", b"application/json")]
SUBMITTED = ev.WorkflowSubmitted(WF, SPEC, None, AT, "t", "defn", 3)
CHILD = ev.ChildSubmitted(WF, "parent-1", "kid", None, 1, SPEC, None, AT, "t", "defn", 3)

BAD: list[tuple[str, dict[str, Any], str]] = [
    ("tenant-9kb", {"tenant": "t" * 9000}, "tenant"),
    ("tenant-201", {"tenant": "t" * (MAX_TENANT_CHARS + 1)}, "tenant"),
    ("definition-9kb", {"definition": "d" * 9000}, "definition"),
    ("definition-empty", {"definition": ""}, "definition"),
    ("definition-at", {"definition": "defn@7"}, "definition"),
    ("definition-nul", {"definition": "de\x00fn"}, "definition"),
    ("definition-rlo", {"definition": "de\u202efn"}, "definition"),
    ("definition-newline", {"definition": "defn\n"}, "definition"),
    ("version-0", {"definition_version": 0}, "definition_version"),
    ("version-negative", {"definition_version": -5}, "definition_version"),
    ("version-2**31", {"definition_version": 2**31}, "definition_version"),
    ("version-without-name", {"definition": None, "definition_version": 3},
     "definition_version"),
]
GOOD: list[dict[str, Any]] = [
    {}, {"tenant": None}, {"tenant": "t" * MAX_TENANT_CHARS},
    {"definition": None, "definition_version": None},
    {"definition": "d" * 100, "definition_version": 2**31 - 1},
    {"definition": "a.b_c-1", "definition_version": 1},
    {"definition": "defn", "definition_version": None},
]


def avro(record: Any, **changes: Any) -> bytes:
    """``record`` with ``changes``, Avro-encoded (a version beyond an int cannot be)."""
    return codec.encode(dataclasses.replace(record, **changes))


def as_json(**changes: Any) -> bytes:
    doc = {"workflow_id": WF, "spec": SPEC, "at_ms": AT, "tenant": "t",
           "definition": "defn", "definition_version": 3, **changes}
    return orjson.dumps(doc)


@pytest.mark.parametrize(("changes", "field"), [(c, f) for _, c, f in BAD],
                         ids=[label for label, _, _ in BAD])
@pytest.mark.parametrize("record", [SUBMITTED, CHILD], ids=["submitted", "child"])
def test_avro_submissions_with_a_bad_field_are_refused(record: Any, changes: dict[str, Any],
                                                       field: str) -> None:
    if changes.get("definition_version") == 2**31:  # an Avro int cannot even hold it
        with pytest.raises(ValueError, match="beyond an Avro int"):
            avro(record, **changes)
        return
    with pytest.raises(DecodeError, match=field):
        decode_input(TOPICS, TOPICS.submissions, WF.encode(), avro(record, **changes), None)


@pytest.mark.parametrize(("changes", "field"), [(c, f) for _, c, f in BAD],
                         ids=[label for label, _, _ in BAD])
def test_json_submissions_with_a_bad_field_are_refused(changes: dict[str, Any],
                                                       field: str) -> None:
    with pytest.raises(DecodeError, match=field):
        decode_input(TOPICS, TOPICS.submissions, WF.encode(), as_json(**changes), JSON_HEADERS)


@pytest.mark.parametrize("version", ["3", True, 1.0])
def test_json_version_of_another_type_is_refused(version: Any) -> None:
    with pytest.raises(DecodeError, match="definition_version"):
        decode_input(TOPICS, TOPICS.submissions, WF.encode(),
                     as_json(definition_version=version), JSON_HEADERS)


@pytest.mark.parametrize("changes", GOOD, ids=[str(i) for i in range(len(GOOD))])
def test_good_fields_pass_both_ways(changes: dict[str, Any]) -> None:
    want = dataclasses.replace(SUBMITTED, **changes)
    assert decode_input(TOPICS, TOPICS.submissions, WF.encode(), avro(SUBMITTED, **changes),
                        None, received_ms=AT) == want
    assert decode_input(TOPICS, TOPICS.submissions, WF.encode(), as_json(**changes),
                        JSON_HEADERS, received_ms=AT) == want


@pytest.mark.parametrize("name", ["n" * 201, "é" * 3000, ["n" * 300]],
                         ids=["201", "3000-two-byte", "list"])
@pytest.mark.parametrize("record", [SUBMITTED, CHILD], ids=["submitted", "child"])
def test_a_spec_name_the_projection_cannot_index_is_refused(record: Any, name: Any) -> None:
    spec = {"name": name, "nodes": []}
    with pytest.raises(DecodeError, match="spec: name: at most 200 characters"):
        decode_input(TOPICS, TOPICS.submissions, WF.encode(), avro(record, spec=spec), None)
    with pytest.raises(DecodeError, match="spec: name: at most 200 characters"):
        decode_input(TOPICS, TOPICS.submissions, WF.encode(),
                     orjson.dumps({"workflow_id": WF, "spec": spec, "at_ms": AT}), JSON_HEADERS)


@pytest.mark.parametrize("name", ["n" * 200, 7, None])
def test_a_short_spec_name_is_left_to_the_spec_check(name: Any) -> None:
    spec = {"name": name, "nodes": []}
    got = decode_input(TOPICS, TOPICS.submissions, WF.encode(), avro(SUBMITTED, spec=spec),
                       None, received_ms=AT)
    assert got.spec == spec
