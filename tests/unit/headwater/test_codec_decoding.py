"""What ``headwater.codec`` refuses to decode, each time with a ``DecodeError`` that
names the fault: bytes that are no record of ours, truncated or corrupt records, and
JSON submissions and signals that are not what their topics take."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import orjson
import pytest
from codec_samples import AT, NESTED, SAMPLES, SPEC, WF, sample_id, schema_docs, standalone
from fastavro.schema import parse_schema

from headwater import codec, json_records
from headwater.core import events as ev
from headwater.errors import DecodeError

# -- what decode refuses ----------------------------------------------------------------

VALID = codec.encode(ev.TaskSucceeded(WF, "n", 3, 1, AT, {"k": [1, 2]}))


def _raw_body(name: str, record: dict[str, Any]) -> bytes:
    """Avro body written straight from a dict (bypassing the codec's JSON encoding)."""
    docs = schema_docs()
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parse_schema(standalone(name, docs)), record)
    return codec.fingerprint_header(name) + buf.getvalue()


NO_MARKER = "no C3 01 marker"
BAD_INPUTS: list[tuple[str, Any, str]] = [
    ("None", None, NO_MARKER),
    ("empty", b"", NO_MARKER),
    ("garbage", b"this is not avro at all", NO_MARKER),
    ("marker only", b"\xc3\x01", NO_MARKER),
    ("short header", VALID[:9], NO_MARKER),
    ("wrong marker", b"\xc3\x02" + VALID[2:], NO_MARKER),
    ("JSON", b'{"workflow_id": "x"}', NO_MARKER),
    ("unknown fingerprint", b"\xc3\x01" + b"\x00" * 8 + VALID[10:], "unknown schema fingerprint"),
    ("header only", VALID[:10], "bad TaskSucceeded body: EOFError"),
    ("truncated by one byte", VALID[:-1], "bad TaskSucceeded body: EOFError"),
    ("trailing byte", VALID + b"\x00", "1 trailing bytes after TaskSucceeded"),
    ("trailing record", VALID + VALID, f"{len(VALID)} trailing bytes"),
    ("union index out of range", VALID[:10] + b"\x02n\x02n\x08\x02\x02\x02\x02", "IndexError"),
    ("corrupt JSON in a bytes field", _raw_body("WorkflowSubmitted", {
        "workflow_id": "w", "spec": b"{not json", "input": b"null", "at_ms": 1, "tenant": None}),
     "bad WorkflowSubmitted body: JSONDecodeError"),
    ("invalid UTF-8 in a string", _raw_body("TimerFired", {
        "workflow_id": "w", "timer_id": "t", "at_ms": 1}).replace(b"\x02w", b"\x02\xff"),
     "UnicodeDecodeError"),
    ("corrupt JSON in a signal's fields", _raw_body("SignalSent", {
        "workflow_id": "w", "name": "s", "at_ms": 1, "index": None, "signal_id": "",
        "fields": b'{"a": tru'}), "bad SignalSent body: JSONDecodeError"),
    ("HistoryEvent with corrupt JSON body", _raw_body("HistoryEvent", {
        "workflow_id": "w", "seq": 1, "body": ("headwater.WorkflowSucceeded", {
            "workflow_id": "w", "at_ms": 1, "output": b"[1,"})}),
     "bad HistoryEvent body: JSONDecodeError"),
]


@pytest.mark.parametrize(("data", "message"), [row[1:] for row in BAD_INPUTS],
                         ids=[row[0] for row in BAD_INPUTS])
def test_undecodable_input_raises_decode_error(data: Any, message: str) -> None:
    with pytest.raises(DecodeError) as info:
        codec.decode(data)
    assert message in str(info.value)


@pytest.mark.parametrize("record", SAMPLES[:8], ids=sample_id)
def test_every_truncation_raises_decode_error(record: Any) -> None:
    data = codec.encode(record)
    for end in range(len(data)):
        with pytest.raises(DecodeError):
            codec.decode(data[:end])


def test_body_errors_are_chained() -> None:
    with pytest.raises(DecodeError) as info:
        codec.decode(VALID[:-3])
    assert info.value.__cause__ is not None
    assert "TaskSucceeded" in str(info.value)


def test_record_type_reads_the_header_alone() -> None:
    assert codec.record_type(codec.fingerprint_header("WorkerAnnounced")) == "WorkerAnnounced"
    assert codec.record_type(VALID[:-3]) == "TaskSucceeded"
    with pytest.raises(DecodeError, match="no C3 01 marker"):
        codec.record_type(None)
    with pytest.raises(DecodeError, match="unknown schema fingerprint"):
        codec.record_type(b"\xc3\x01" + b"\x00" * 8)


# -- JSON submissions ---------------------------------------------------------------------

GOOD_JSON = {"workflow_id": WF, "spec": SPEC, "input": NESTED, "at_ms": AT, "tenant": "t"}


def test_json_submission_is_decoded() -> None:
    got = json_records.decode_json_submission(orjson.dumps(GOOD_JSON))
    assert got == ev.WorkflowSubmitted(WF, SPEC, NESTED, AT, "t")
    minimal = {"workflow_id": "w", "spec": None, "at_ms": 0}
    assert json_records.decode_json_submission(orjson.dumps(minimal)) == ev.WorkflowSubmitted(
        "w", None, None, 0, None)


def _without(key: str) -> dict[str, Any]:
    return {k: v for k, v in GOOD_JSON.items() if k != key}


BAD_JSON: list[tuple[str, Any]] = [
    ("None", None), ("empty", b""), ("not JSON", b"{oops"), ("array", b"[1, 2]"),
    ("string", b'"wf"'),
    ("no workflow_id", orjson.dumps(_without("workflow_id"))),
    ("empty workflow_id", orjson.dumps({**GOOD_JSON, "workflow_id": ""})),
    ("numeric workflow_id", orjson.dumps({**GOOD_JSON, "workflow_id": 7})),
    ("no at_ms", orjson.dumps(_without("at_ms"))),
    ("float at_ms", orjson.dumps({**GOOD_JSON, "at_ms": 1.5})),
    ("bool at_ms", orjson.dumps({**GOOD_JSON, "at_ms": True})),
    ("string at_ms", orjson.dumps({**GOOD_JSON, "at_ms": "1"})),
    ("numeric tenant", orjson.dumps({**GOOD_JSON, "tenant": 3})),
    ("no spec", orjson.dumps(_without("spec"))),
]


@pytest.mark.parametrize("data", [b for _, b in BAD_JSON], ids=[n for n, _ in BAD_JSON])
def test_bad_json_submission_raises_decode_error(data: Any) -> None:
    with pytest.raises(DecodeError):
        json_records.decode_json_submission(data)


def test_an_integer_beyond_64_bits_is_refused_not_read_as_a_float() -> None:
    """orjson reads such an integer as a float: the run would see another number."""
    big = b'{"workflow_id": "w", "at_ms": 1, "spec": {}, "input": {"v": 123456789012345678901}}'
    with pytest.raises(DecodeError, match="integer outside the signed 64-bit range"):
        json_records.decode_json_submission(big)
    fits = b'{"workflow_id": "w", "at_ms": 1, "spec": {}, "input": {"v": 9223372036854775807,'
    fits += b' "id": "12345678901234567890", "f": 1.2345678901234567890}}'
    got = json_records.decode_json_submission(fits)
    assert got.input == {"v": 2**63 - 1, "id": "12345678901234567890",
                         "f": 1.2345678901234567}
    with pytest.raises(DecodeError, match="integer outside"):
        json_records.decode_json_signal(b'{"workflow_id": "w", "at_ms": 1, "name": "s",'
                                        b' "fields": {"n": -9223372036854775809}}')


# -- JSON signals --------------------------------------------------------------------------

GOOD_SIGNAL = {"workflow_id": WF, "name": "approval", "at_ms": AT, "index": 3,
               "signal_id": "sig-ü", "fields": {"approved": True, "note": NESTED}}


def test_json_signal_is_decoded() -> None:
    got = json_records.decode_json_signal(orjson.dumps(GOOD_SIGNAL))
    assert got == ev.SignalSent(WF, "approval", AT, 3, "sig-ü",
                                {"approved": True, "note": NESTED})
    minimal = {"workflow_id": "w", "name": "s", "at_ms": 0}
    assert json_records.decode_json_signal(orjson.dumps(minimal)) == ev.SignalSent("w", "s", 0)
    with_nulls = {**minimal, "index": None, "fields": None}
    assert json_records.decode_json_signal(orjson.dumps(with_nulls)) == ev.SignalSent("w", "s", 0)


def _deep(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


BAD_SIGNALS: list[tuple[str, Any, str]] = [
    ("None", None, "not JSON"), ("not JSON", b"{oops", "not JSON"),
    ("array", b"[1]", "a JSON signal must be an object"),
    ("no workflow_id", {**GOOD_SIGNAL, "workflow_id": None}, "workflow_id: required"),
    ("no at_ms", {k: v for k, v in GOOD_SIGNAL.items() if k != "at_ms"}, "at_ms: required"),
    ("float at_ms", {**GOOD_SIGNAL, "at_ms": 1.0}, "at_ms: required"),
    ("no name", {k: v for k, v in GOOD_SIGNAL.items() if k != "name"}, "name: required"),
    ("empty name", {**GOOD_SIGNAL, "name": ""}, "name: required"),
    ("numeric name", {**GOOD_SIGNAL, "name": 5}, "name: required"),
    ("string index", {**GOOD_SIGNAL, "index": "3"}, "index: must be null or an integer"),
    ("bool index", {**GOOD_SIGNAL, "index": True}, "index: must be null or an integer"),
    ("negative index", {**GOOD_SIGNAL, "index": -1}, "index: must be null or an integer"),
    ("huge index", {**GOOD_SIGNAL, "index": 2**31}, "index: must be null or an integer"),
    ("numeric signal_id", {**GOOD_SIGNAL, "signal_id": 7}, "signal_id: must be a string"),
    ("null signal_id", {**GOOD_SIGNAL, "signal_id": None}, "signal_id: must be a string"),
    ("deep fields", {**GOOD_SIGNAL, "fields": _deep(codec.MAX_JSON_DEPTH + 1)},
     "fields: JSON nested deeper than"),
]


@pytest.mark.parametrize(("doc", "message"), [row[1:] for row in BAD_SIGNALS],
                         ids=[row[0] for row in BAD_SIGNALS])
def test_bad_json_signal_raises_decode_error(doc: Any, message: str) -> None:
    data = doc if doc is None or isinstance(doc, bytes) else orjson.dumps(doc)
    with pytest.raises(DecodeError, match=message):
        json_records.decode_json_signal(data)


def test_decoded_node_and_worker_ids_are_one_shared_copy_each() -> None:
    """Every report of a task brings its node and worker ids; decoded, equal ones are one
    object (a wide map's state keeps a task per item)."""
    node, worker = "".join(["extract", "_pages"]), "".join(["worker-", "7"])
    first = codec.decode(codec.encode(ev.TaskStarted(WF, node, 0, 1, AT, worker)))
    second = codec.decode(codec.encode(ev.TaskStarted(WF, node, 1, 1, AT, worker)))
    assert first.node is second.node == "extract_pages"
    assert first.worker is second.worker == "worker-7"
