"""The definition a run was resolved from travels with it: ``WorkflowSubmitted``,
``ChildSubmitted`` and ``WorkflowAccepted`` (and so ``HistoryEvent``) carry
``definition`` and ``definition_version``, and records written with the schemas before
them (``schemas/avro/retired``) still decode, with both None."""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import orjson
import pytest
from fastavro.schema import parse_schema

from headwater import codec, json_records
from headwater.core import events as ev
from headwater.errors import DecodeError

RETIRED = codec.schema_dir() / "retired"
SPEC = {"name": "billing", "nodes": [{"id": "a", "task": "t.a"}]}
WITH_DEFINITION = [
    ev.WorkflowSubmitted("wf", SPEC, {"x": 1}, 5, "team", definition="billing",
                         definition_version=3),
    ev.ChildSubmitted("wf:c:1", "wf", "c", None, 1, SPEC, None, 5, None,
                      definition="billing", definition_version=2**31 - 1),
    ev.WorkflowAccepted("wf", 5, SPEC, [1], None, definition="billing", definition_version=1),
    ev.HistoryEvent("wf", 1, ev.WorkflowAccepted("wf", 5, SPEC, None, "team",
                                                 definition="billing", definition_version=7)),
]
OLD = [  # a record of each retired schema, and the file of that schema
    (ev.WorkflowSubmitted("wf", SPEC, {"x": 1}, 5, "team"),
     "WorkflowSubmitted.4352daf63ea76d9b.avsc"),
    (ev.ChildSubmitted("wf:c:1", "wf", "c", 2, 1, SPEC, None, 5, "team"),
     "ChildSubmitted.18a98731af641533.avsc"),
    (ev.WorkflowAccepted("wf", 5, SPEC, None, None), "WorkflowAccepted.4a3e708c9a2bf0a3.avsc"),
    (ev.HistoryEvent("wf", 1, ev.WorkflowAccepted("wf", 5, SPEC, None, "team")),
     "HistoryEvent.2efe43c43673a9f7.avsc"),
    (ev.HistoryEvent("wf", 3, ev.TaskSucceeded("wf", "a", None, 1, 9, {"y": 2})),
     "HistoryEvent.2efe43c43673a9f7.avsc"),
    (ev.HistoryEvent("wf", 1, ev.WorkflowAccepted("wf", 5, SPEC, None, "team")),
     "HistoryEvent.5b5babb29e2a09e6.avsc"),
]


def _written_with(path: Path, record: object) -> bytes:
    """``record`` as a producer that knew only the retired schema wrote it."""
    schema = parse_schema(orjson.loads(path.read_bytes()))
    buf = io.BytesIO()
    buf.write(codec.MAGIC + bytes.fromhex(path.name.split(".")[1]))
    fastavro.schemaless_writer(buf, schema, codec._to_avro(record))
    return buf.getvalue()


@pytest.mark.parametrize("record", WITH_DEFINITION, ids=[type(r).__name__ for r in WITH_DEFINITION])
def test_the_definition_survives_a_round_trip(record: object) -> None:
    assert codec.decode(codec.encode(record)) == record


@pytest.mark.parametrize("record", [r for r, _ in OLD[:3]], ids=["submitted", "child", "accepted"])
def test_without_a_definition_both_fields_are_none(record: object) -> None:
    decoded = codec.decode(codec.encode(record))
    assert decoded == record
    assert (decoded.definition, decoded.definition_version) == (None, None)


@pytest.mark.parametrize(("record", "file"), OLD, ids=[f"{f}-{i}" for i, (_, f) in enumerate(OLD)])
def test_a_record_of_a_retired_schema_decodes_without_a_definition(record: object,
                                                                   file: str) -> None:
    data = _written_with(RETIRED / file, record)
    assert data[2:10].hex() == file.split(".")[1]
    assert codec.decode(data) == record  # definition and definition_version None
    assert codec.encode(record)[:10] != data[:10]  # new records name the current schema
    with pytest.raises(DecodeError):
        codec.decode(data[:-2])


def test_a_json_submission_may_name_its_definition() -> None:
    doc = {"workflow_id": "wf", "spec": SPEC, "at_ms": 5, "definition": "billing",
           "definition_version": 4}
    assert json_records.decode_json_submission(orjson.dumps(doc)) == ev.WorkflowSubmitted(
        "wf", SPEC, None, 5, definition="billing", definition_version=4)
    plain = json_records.decode_json_submission(orjson.dumps({**doc, "definition": None,
                                                       "definition_version": None}))
    assert (plain.definition, plain.definition_version) == (None, None)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("definition", 3, "definition: must be a string"),
    ("definition_version", "3", "definition_version: must be null or an integer"),
    ("definition_version", True, "definition_version: must be null or an integer"),
])
def test_a_json_submission_with_a_malformed_definition_is_a_decode_error(
        field: str, value: object, message: str) -> None:
    # Values of the right type (a version of 0, a name with "@") are checked by the
    # coordinator for Avro and JSON alike: test_coordinator_submission_fields.
    doc = {"workflow_id": "wf", "spec": SPEC, "at_ms": 5, field: value}
    with pytest.raises(DecodeError, match=message):
        json_records.decode_json_submission(orjson.dumps(doc))
