"""Avro single-object encoding of every record (``headwater.codec``)."""

from __future__ import annotations

import dataclasses
import io
import struct
from pathlib import Path
from typing import Any

import fastavro
import orjson
import pytest
from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form

from headwater import codec
from headwater.core import events as ev
from headwater.core.definitions import DefinitionHead, DefinitionStored
from headwater.errors import DecodeError
from headwater.workers import WorkerAnnounced

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas" / "avro"
WF = "wf-ü-漢字-1"
AT = 1_722_000_000_123
SPEC = {"name": "ß", "nodes": [{"id": "a", "task": "t", "input": {"x": ["${input.q}", 1.5]}}]}
NESTED: dict[str, Any] = {
    "q": "ünïcode ✓", "n": [1, -2, 3.25, None, True, {"deep": [[], {}]}], "e": ""}


def _with_index(cls: type[Any], **fields: Any) -> list[Any]:
    return [cls(**fields, index=None), cls(**fields, index=7)]


def body_samples() -> list[Any]:
    base = {"workflow_id": WF, "node": "nöde", "attempt": 2, "at_ms": AT}
    return [
        ev.WorkflowAccepted(WF, AT, SPEC, NESTED, "tënant"),
        ev.WorkflowAccepted(WF, AT, SPEC, None, None),
        *_with_index(ev.TaskDispatched, **base, task="pkg.task", queue="gpu", input=NESTED,
                     timeout_s=12.5, heartbeat_timeout_s=3.0, checkpoint={"done": [1, 2]}),
        ev.TaskDispatched(WF, "n", None, 1, "t", "cpu", [], AT, None),
        *_with_index(ev.TaskStarted, **base, worker="host-1/pid-2"),
        *_with_index(ev.TaskProgressed, **base, fraction=0.3, message="30 % ⏳"),
        *_with_index(ev.TaskHeartbeated, **base),
        *_with_index(ev.TaskCheckpointed, **base, checkpoint={"cursor": NESTED}),
        ev.TaskCheckpointed(WF, "n", None, 1, AT, None),
        *_with_index(ev.TaskOutputStreamed, **base, chunk_seq=41, chunk="tök"),
        ev.TaskOutputStreamed(WF, "n", 0, 1, AT, 0, {"delta": [NESTED]}),
        *_with_index(ev.TaskCancelled, **base, reason="workflow cancelled ✋"),
        *_with_index(ev.ReportDiscarded, **base, report="TaskSucceeded",
                     reason="attempt 2 had already ended: timed out"),
        *_with_index(ev.TaskSucceeded, **base, output={"result": NESTED, "list": [SPEC]}),
        ev.TaskSucceeded(WF, "n", 0, 1, AT, None),
        *_with_index(ev.TaskFailed, **base, error="ValueError: bad ☹", error_type="ValueError",
                     retryable=False),
        *_with_index(ev.TimerScheduled, workflow_id=WF, timer_id="retry:nöde[7]:3",
                     fire_at_ms=AT + 2**40, node="nöde", attempt=3, at_ms=AT),
        ev.TimerFired(WF, "retry:n:2", AT),
        ev.MapExpanded(WF, "m", 10_000, AT),
        *kind_body_samples(),
        ev.NodeFinished(WF, "nöde", "failed", AT, "needs a, which failed"),
        ev.WorkflowSucceeded(WF, AT, {"out": NESTED}),
        ev.WorkflowSucceeded(WF, AT, None),
        ev.WorkflowFailed(WF, AT, "invalid spec: cycle: a -> b -> a"),
        ev.WorkflowCancelled(WF, AT, "user ✋"),
    ]


def kind_body_samples() -> list[Any]:
    """The history bodies of waits, signals, sleeps, conditions, children and loops."""
    return [
        ev.ParentLinked(WF, "pärent-1", "child", None, 3, AT),
        ev.ParentLinked(WF, "p", "kids", 12, 1, AT),
        *_with_index(ev.WaitStarted, workflow_id=WF, node="approve", signal="approvål",
                     at_ms=AT, timeout_at_ms=AT + 2**40),
        ev.WaitStarted(WF, "w", None, "s", AT),
        ev.SignalSent(WF, "approval", AT, None, "sig-ü-1", {"approved": True, "n": NESTED}),
        ev.SignalSent(WF, "approval", AT, 2**31 - 1),
        *_with_index(ev.SignalConsumed, workflow_id=WF, node="approve", name="approval",
                     signal_id="sig-1", at_ms=AT, fields={"note": "ok ✓", "deep": [NESTED]}),
        ev.SignalConsumed(WF, "w", None, "s", "", AT),
        *_with_index(ev.SignalDiscarded, workflow_id=WF, name="approval", signal_id="sig-2",
                     at_ms=AT, reason="wait approve had ended: timed out"),
        ev.SignalDiscarded(WF, "s", None, "", AT),
        ev.SleepStarted(WF, "nap", AT, AT + 3_000),
        ev.ConditionEvaluated(WF, "refund", AT, False),
        ev.ConditionEvaluated(WF, "refund", AT),
        ev.LoopStepDecided(WF, "agent", 0, AT, tool="search", input={"q": NESTED}, spend=12.5),
        ev.LoopStepDecided(WF, "agent", 4, AT, finish=True, output={"answer": [SPEC]}),
        ev.LoopStepDecided(WF, "agent", 999, AT),
        ev.ScheduleArmed(WF, "fire", AT, AT + 2_000),
        ev.ScheduleFired(WF, "fire", AT, AT - 5, "started", f"{WF}:fire.0:1"),
        ev.ScheduleFired(WF, "fire", AT, AT - 90_000, "skipped_missed"),
        ev.SchedulePaused(WF, "fire", AT, "sig-1"),
        ev.ScheduleResumed(WF, "fire", AT),
    ]


def other_samples() -> list[Any]:
    """The records that are no workflow records: the definitions' and the workers'."""
    return [
        DefinitionStored("grëet", 1, SPEC, None, "d" * 64, AT),
        DefinitionStored("greet", 2**31 - 1, SPEC, {"type": "object", "properties": NESTED},
                         "e" * 64, 0),
        DefinitionHead("grëet", 3, False, AT),
        DefinitionHead("greet", 1, True, AT),
        WorkerAnnounced("host-1-42", "gpu", ("embed", "ränk"), 4, 2, "0.1.0", "höst", 42,
                        AT - 60_000, AT, 5000),
        WorkerAnnounced("w", "cpu", (), 1, 0, "unknown", "h", 2**31 - 1, 0, AT, 1, True),
    ]


def samples() -> list[Any]:
    bodies = body_samples()
    return [
        ev.WorkflowSubmitted(WF, SPEC, NESTED, AT, "tënant"),
        ev.WorkflowSubmitted(WF, SPEC, None, 0, None),
        ev.CancelRequested(WF, AT, "because"),
        ev.ChildSubmitted(f"{WF}:child:2", WF, "child", None, 2, SPEC, NESTED, AT, "tënant"),
        ev.ChildSubmitted(f"{WF}:kids.7:1", WF, "kids", 7, 1, SPEC, None, AT),
        *bodies,
        *(ev.HistoryEvent(WF, seq, body) for seq, body in enumerate(bodies, start=1)),
        ev.HistoryEvent(WF, 2**62, ev.TimerFired(WF, "t", AT)),
        *other_samples(),
    ]


def sample_id(record: Any) -> str:
    if isinstance(record, ev.HistoryEvent):
        return f"HistoryEvent[{record.type}]"
    return type(record).__name__


SAMPLES = samples()


def schema_docs() -> dict[str, Any]:
    return {p.stem: orjson.loads(p.read_bytes()) for p in sorted(SCHEMAS.glob("*.avsc"))}


def standalone(name: str, docs: dict[str, Any]) -> Any:
    """The schema with HistoryEvent's named body types written out in place."""
    doc = docs[name]
    if name != "HistoryEvent":
        return doc
    fields = [dict(f) for f in doc["fields"]]
    for f in fields:
        if f["name"] == "body":
            f["type"] = [docs[t.removeprefix("headwater.")] for t in f["type"]]
    return {**doc, "fields": fields}


def crc64_avro(data: bytes) -> int:
    """CRC-64-AVRO as written out in the Avro specification."""
    empty = 0xC15D213AA4D7A795
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (empty & -(fp & 1))
        table.append(fp)
    fp = empty
    for byte in data:
        fp = (fp >> 8) ^ table[(fp ^ byte) & 0xFF]
    return fp


# -- every schema has a record type and round-trips --------------------------------------


def test_every_schema_file_has_a_record_type_and_back() -> None:
    assert set(schema_docs()) == set(codec.RECORD_TYPES)
    assert {type(r).__name__ for r in SAMPLES} == set(codec.RECORD_TYPES)
    bodies = {type(b).__name__ for b in body_samples()}
    assert bodies == {cls.__name__ for cls in ev.Body.__args__}


@pytest.mark.parametrize("record", SAMPLES, ids=sample_id)
def test_round_trip(record: Any) -> None:
    data = codec.encode(record)
    decoded = codec.decode(data)
    assert decoded == record
    assert type(decoded) is type(record)


@pytest.mark.parametrize("name", sorted(codec.RECORD_TYPES))
def test_header_is_marker_and_crc64_fingerprint_of_the_schema_file(name: str) -> None:
    docs = schema_docs()
    canonical = to_parsing_canonical_form(parse_schema(standalone(name, docs), _write_hint=False))
    expected = bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))
    assert expected == struct.pack("<Q", crc64_avro(canonical.encode()))  # little-endian
    header = codec.fingerprint_header(name)
    assert header == b"\xc3\x01" + expected
    assert len(header) == codec.HEADER_SIZE
    record = next(r for r in SAMPLES if type(r).__name__ == name)
    assert codec.encode(record)[: codec.HEADER_SIZE] == header


def test_crc64_reference_vector() -> None:
    # The Avro specification's fingerprint of the schema "null".
    assert crc64_avro(b'"null"') == 7195948357588979594


def test_fingerprints_are_distinct() -> None:
    headers = [codec.fingerprint_header(n) for n in codec.RECORD_TYPES]
    assert len(set(headers)) == len(headers)


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


def test_encode_rejects_values_that_are_not_json() -> None:
    with pytest.raises(ValueError, match="TaskSucceeded does not fit its schema"):
        codec.encode(ev.TaskSucceeded(WF, "n", None, 1, AT, {1, 2}))
    with pytest.raises(KeyError):
        codec.encode(ev.HistoryEvent)


def test_a_signals_fields_are_a_json_document() -> None:
    record = ev.SignalSent(WF, "s", AT, None, "", {"a": [1, {"b": None}]})
    assert b'{"a":[1,{"b":null}]}' in codec.encode(record)
    with pytest.raises(ValueError, match="SignalSent does not fit its schema"):
        codec.encode(ev.SignalSent(WF, "s", AT, None, "", {"a": {1, 2}}))
    deep: Any = 0
    for _ in range(codec.MAX_JSON_DEPTH + 1):
        deep = [deep]
    with pytest.raises(ValueError, match="fields: JSON nested deeper than"):
        codec.encode(ev.SignalSent(WF, "s", AT, None, "", deep))


def test_encode_out_of_range_long_raises_value_error() -> None:
    record = ev.TimerScheduled(WF, "t", 2**63, "n", None, 2, AT)
    with pytest.raises(ValueError):
        codec.encode(record)


@pytest.mark.parametrize("record", [
    ev.TaskSucceeded(WF, "n", None, 2**31, AT, None),
    ev.TaskSucceeded(WF, "n", -(2**31) - 1, 1, AT, None),
    ev.HistoryEvent(WF, 1, ev.MapExpanded(WF, "m", 2**31, AT)),
    DefinitionHead("g", 2**31, False, AT),
    WorkerAnnounced("w", "q", (), 1, 0, "v", "h", 2**32, 0, AT, 1),
], ids=lambda r: type(r).__name__)
def test_an_integer_beyond_an_avro_int_does_not_encode(record: Any) -> None:
    """fastavro would write it (an Avro ``int`` is a zig-zag varint like a ``long``):
    other Avro readers would not read it back."""
    with pytest.raises(ValueError, match="is beyond an Avro int"):
        codec.encode(record)
    smallest = ev.TaskSucceeded(WF, "n", -(2**31), 2**31 - 1, AT, None)
    assert codec.decode(codec.encode(smallest)) == smallest


def test_an_array_decodes_as_a_tuple_and_null_json_as_none() -> None:
    announced = next(r for r in SAMPLES if isinstance(r, WorkerAnnounced))
    assert codec.decode(codec.encode(announced)).tasks == ("embed", "ränk")
    stored = DefinitionStored("g", 1, SPEC, None, "d", AT)
    assert b"\x08null" in codec.encode(stored)  # the JSON document null, 4 bytes long
    assert codec.decode(codec.encode(stored)).input_schema is None
    deep: Any = 0
    for _ in range(codec.MAX_JSON_DEPTH + 1):
        deep = [deep]
    with pytest.raises(ValueError, match="input_schema: JSON nested deeper than"):
        codec.encode(DefinitionStored("g", 1, SPEC, deep, "d", AT))


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
    got = codec.decode_json_submission(orjson.dumps(GOOD_JSON))
    assert got == ev.WorkflowSubmitted(WF, SPEC, NESTED, AT, "t")
    minimal = {"workflow_id": "w", "spec": None, "at_ms": 0}
    assert codec.decode_json_submission(orjson.dumps(minimal)) == ev.WorkflowSubmitted(
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
        codec.decode_json_submission(data)


# -- JSON signals --------------------------------------------------------------------------

GOOD_SIGNAL = {"workflow_id": WF, "name": "approval", "at_ms": AT, "index": 3,
               "signal_id": "sig-ü", "fields": {"approved": True, "note": NESTED}}


def test_json_signal_is_decoded() -> None:
    got = codec.decode_json_signal(orjson.dumps(GOOD_SIGNAL))
    assert got == ev.SignalSent(WF, "approval", AT, 3, "sig-ü",
                                {"approved": True, "note": NESTED})
    minimal = {"workflow_id": "w", "name": "s", "at_ms": 0}
    assert codec.decode_json_signal(orjson.dumps(minimal)) == ev.SignalSent("w", "s", 0)
    with_nulls = {**minimal, "index": None, "fields": None}
    assert codec.decode_json_signal(orjson.dumps(with_nulls)) == ev.SignalSent("w", "s", 0)


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
        codec.decode_json_signal(data)


def test_record_types_are_the_event_dataclasses_and_the_two_others() -> None:
    others = {DefinitionStored, DefinitionHead, WorkerAnnounced}
    for name, cls in codec.RECORD_TYPES.items():
        assert dataclasses.is_dataclass(cls) and cls.__name__ == name
        assert cls in others or cls is getattr(ev, name)
    assert others <= set(codec.RECORD_TYPES.values())
