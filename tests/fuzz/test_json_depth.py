"""A JSON field nested deeper than the system can write back is refused at the Kafka
edge (``headwater.codec.MAX_JSON_DEPTH``), both ways.

Found by ``python -m fuzzer``: a ``WorkflowSubmitted`` whose input was nested 254
levels deep decoded (orjson reads up to 1024 levels), was accepted, and then the
coordinator could not write its table entry (orjson writes at most 254 levels, and the
entry puts the input one level down): every batch holding it failed and the coordinator
restarted for ever, committing nothing (3,408 inputs stuck after 300 s). Before the fix
``test_a_record_nested_too_deep_is_undecodable`` decoded it.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import fastavro
import orjson
import pytest

from headwater import codec, json_records
from headwater.core import events as ev
from headwater.errors import DecodeError

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas" / "avro"


def nested(levels: int) -> Any:
    """A list nested ``levels`` deep (``[[...["x"]...]]``)."""
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


def raw_submission(input_text: bytes) -> bytes:
    """A ``WorkflowSubmitted`` whose input is ``input_text``, written without the codec
    (which refuses to write it)."""
    schema = fastavro.parse_schema(orjson.loads((SCHEMAS / "WorkflowSubmitted.avsc").read_bytes()))
    buf = io.BytesIO()
    buf.write(codec.fingerprint_header("WorkflowSubmitted"))
    fastavro.schemaless_writer(buf, schema, {
        "workflow_id": "w", "spec": b'{"name": "x", "nodes": []}', "input": input_text,
        "at_ms": 1, "tenant": None})
    return buf.getvalue()


@pytest.mark.parametrize("levels", [codec.MAX_JSON_DEPTH + 1, 254, 1024])
def test_a_record_nested_too_deep_is_undecodable(levels: int) -> None:
    data = raw_submission(orjson.dumps(nested(levels)) if levels <= 254
                          else b"[" * levels + b"]" * levels)
    with pytest.raises(DecodeError, match=f"input: JSON nested deeper than "
                                          f"{codec.MAX_JSON_DEPTH} levels"):
        codec.decode(data)


def test_what_decodes_fits_a_table_entry() -> None:
    record = codec.decode(raw_submission(orjson.dumps(nested(codec.MAX_JSON_DEPTH))))
    assert orjson.dumps({"entry": {"input": record.input}}), "two levels more still write"


def test_a_json_submission_nested_too_deep_is_undecodable() -> None:
    doc = b'{"workflow_id": "w", "at_ms": 1, "spec": ' + b"[" * 254 + b"]" * 254 + b"}"
    with pytest.raises(DecodeError, match="spec: JSON nested deeper than"):
        json_records.decode_json_submission(doc)


def test_encoding_refuses_what_decoding_would() -> None:
    at_limit = ev.TaskSucceeded("w", "n", None, 1, 1, nested(codec.MAX_JSON_DEPTH))
    assert codec.decode(codec.encode(at_limit)) == at_limit
    with pytest.raises(ValueError, match="output: JSON nested deeper than"):
        codec.encode(ev.TaskSucceeded("w", "n", None, 1, 1, nested(codec.MAX_JSON_DEPTH + 1)))


def test_many_brackets_at_small_depth_are_fine() -> None:
    wide = [[i] for i in range(10 * codec.MAX_JSON_DEPTH)]
    record = ev.TaskSucceeded("w", "n", None, 1, 1, {"rows": wide, "text": "[" * 500})
    assert codec.decode(codec.encode(record)) == record
