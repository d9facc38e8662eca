"""Records written with a retired schema still decode: a history recorded before the
schemas gained the wait, sleep, condition, child and loop events replays after the
upgrade, and a cancel written before ``CancelRequested`` gained ``parent_id`` reads as a
user's cancel (``codec._retired``)."""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import orjson
import pytest
from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form

from headwater import codec
from headwater.announcement import WorkerAnnounced
from headwater.core import events as ev
from headwater.errors import DecodeError

RETIRED = sorted((codec.schema_dir() / "retired").glob("*.avsc"))
HISTORY = codec.schema_dir() / "retired" / "HistoryEvent.5b5babb29e2a09e6.avsc"
CANCEL = codec.schema_dir() / "retired" / "CancelRequested.deb890aceefe0881.avsc"
OLD_BODIES = [
    ev.TaskSucceeded("wf", "a", None, 1, 5, {"x": [1, 2]}),
    ev.TaskDispatched("wf", "m", 3, 2, "t", "cpu", {"i": 3}, 7, 1.5, 30.0, None),
    ev.NodeFinished("wf", "a", "failed", 9, "boom"),
    ev.WorkflowAccepted("wf", 1, {"name": "n", "nodes": []}, None, "team"),
]


def _written_with(path: Path, record: object) -> bytes:
    schema = parse_schema(orjson.loads(path.read_bytes()))
    buf = io.BytesIO()
    buf.write(codec.MAGIC + bytes.fromhex(path.name.split(".")[1]))
    fastavro.schemaless_writer(buf, schema, codec._to_avro(record))
    return buf.getvalue()


def test_the_retired_schemas_are_those_kept_on_purpose() -> None:
    assert [p.name for p in RETIRED] == [
        "CacheServed.ade084d001314379.avsc",
        "CancelRequested.deb890aceefe0881.avsc", "ChildSubmitted.18a98731af641533.avsc",
        "DefinitionHead.13dad2c5dd3a2407.avsc",
        "DefinitionHead.bb541cea77106524.avsc", "DefinitionStored.d7f72710f6b0e6e2.avsc",
        "HistoryEvent.116c43fef5d0a1d4.avsc",
        "HistoryEvent.1b68ff49ef90d49e.avsc",
        "HistoryEvent.1bf2bdde1f28d544.avsc",
        "HistoryEvent.2efe43c43673a9f7.avsc", "HistoryEvent.33447ba1d111a15e.avsc",
        "HistoryEvent.4c2b6779465fc3f2.avsc",
        "HistoryEvent.5b5babb29e2a09e6.avsc", "HistoryEvent.82c96d95fc865caa.avsc",
        "HistoryEvent.9ba5b58d32e7d4a2.avsc", "HistoryEvent.9d73af89cf1fbe55.avsc",
        "HistoryEvent.cfb729ca7841efa2.avsc", "HistoryEvent.f3d2eb75fb7902db.avsc",
        "HistoryEvent.f51a805cc806b639.avsc",
        "TaskFailed.0b6941b810810df8.avsc",
        "TaskSucceeded.1f2a2065b8027f69.avsc", "TaskSucceeded.f97d00b43baf888d.avsc",
        "WorkerAnnounced.8ccd56ccf9cd1d7a.avsc", "WorkerAnnounced.a5848b799ae5eb2c.avsc",
        "WorkflowAccepted.46616e9c0e8bd649.avsc", "WorkflowAccepted.4a3e708c9a2bf0a3.avsc",
        "WorkflowAccepted.4e5bc7586555555d.avsc",
        "WorkflowRestarted.cb9e872934eb4137.avsc",
        "WorkflowSubmitted.0927d0038bef2ce2.avsc",
        "WorkflowSubmitted.4352daf63ea76d9b.avsc", "WorkflowSubmitted.739e53d90573c0fc.avsc",
        "WorkflowSubmitted.f9729656f2b59fba.avsc"]


@pytest.mark.parametrize("path", RETIRED, ids=[p.name for p in RETIRED])
def test_a_retired_schema_is_named_by_its_fingerprint(path: Path) -> None:
    parsed = parse_schema(orjson.loads(path.read_bytes()))
    assert fingerprint(to_parsing_canonical_form(parsed), "CRC-64-AVRO") == path.name.split(".")[1]
    assert codec.fingerprint_header(path.name.split(".")[0])[2:].hex() != path.name.split(".")[1]


@pytest.mark.parametrize("body", OLD_BODIES, ids=[type(b).__name__ for b in OLD_BODIES])
def test_history_written_with_the_retired_schema_decodes(body: ev.Body) -> None:
    record = ev.HistoryEvent("wf", 4, body)
    data = _written_with(HISTORY, record)
    assert codec.decode(data) == record
    assert codec.encode(record) != data  # new records name the current schema


def test_a_truncated_retired_record_is_a_decode_error() -> None:
    data = _written_with(HISTORY, ev.HistoryEvent("wf", 1, OLD_BODIES[0]))
    with pytest.raises(DecodeError):
        codec.decode(data[:-3])


def test_a_cancel_written_before_parent_id_decodes_as_a_users_cancel() -> None:
    old = ev.CancelRequested("wf", 7, "user asked")
    schema = parse_schema(orjson.loads(CANCEL.read_bytes()))
    buf = io.BytesIO()
    buf.write(codec.MAGIC + bytes.fromhex(CANCEL.name.split(".")[1]))
    fastavro.schemaless_writer(buf, schema, {"workflow_id": "wf", "at_ms": 7,
                                             "reason": "user asked"})
    data = buf.getvalue()
    assert codec.decode(data) == old and old.parent_id is None
    assert codec.encode(old) != data  # new records name the current schema
    parent = ev.CancelRequested("wf:c:1", 7, "parent wf: timed out", parent_id="wf")
    assert codec.decode(codec.encode(parent)) == parent
    with pytest.raises(DecodeError):
        codec.decode(data[:-2])


def test_retire_schema_keeps_the_current_schema_under_the_fingerprint_records_carry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``retire_schema.py`` (run before a schema changes) writes the file that ``codec``
    will read the records already written with that schema by."""
    import shutil

    from retire_schema import retire

    shutil.copytree(codec.schema_dir(), tmp_path / "avro")
    monkeypatch.setenv("HEADWATER_SCHEMA_DIR", str(tmp_path / "avro"))
    path = retire("CancelRequested")
    written = codec.fingerprint_header("CancelRequested")[len(codec.MAGIC):].hex()
    assert path.name == f"CancelRequested.{written}.avsc"
    kept = parse_schema(orjson.loads(path.read_bytes()))
    assert fingerprint(to_parsing_canonical_form(kept), "CRC-64-AVRO") == written


TASK_FAILED = codec.schema_dir() / "retired" / "TaskFailed.0b6941b810810df8.avsc"
HISTORY_BEFORE_TRACEBACK = codec.schema_dir() / "retired" / "HistoryEvent.9d73af89cf1fbe55.avsc"


def _old_task_failed(path: Path, record: dict[str, object]) -> bytes:
    schema = parse_schema(orjson.loads(path.read_bytes()))
    buf = io.BytesIO()
    buf.write(codec.MAGIC + bytes.fromhex(path.name.split(".")[1]))
    fastavro.schemaless_writer(buf, schema, record)
    return buf.getvalue()


def test_a_failure_reported_before_traceback_decodes_with_an_empty_one() -> None:
    fields = {"workflow_id": "wf", "node": "a", "index": None, "attempt": 2, "at_ms": 9,
              "error": "boom", "error_type": "KeyError", "retryable": True}
    decoded = codec.decode(_old_task_failed(TASK_FAILED, fields))
    assert decoded == ev.TaskFailed("wf", "a", None, 2, 9, "boom", "KeyError", True)
    assert decoded.traceback == ""


def test_a_failure_recorded_before_traceback_decodes_with_an_empty_one() -> None:
    body = ev.TaskFailed("wf", "m", 4, 1, 9, "boom", "KeyError", False)
    data = _written_with(HISTORY_BEFORE_TRACEBACK, ev.HistoryEvent("wf", 6, body))
    decoded = codec.decode(data)
    assert isinstance(decoded, ev.HistoryEvent) and decoded.body == body
    assert decoded.body.traceback == ""
    with_one = ev.HistoryEvent("wf", 6, ev.TaskFailed("wf", "m", 4, 1, 9, "boom", "KeyError",
                                                      False, "Traceback ...\nKeyError: boom\n"))
    assert codec.decode(codec.encode(with_one)) == with_one


def test_a_restart_written_before_continue_as_new_decodes_as_a_restart() -> None:
    old = ev.WorkflowRestarted("wf", 3, 2, 4, "a[0] attempt 1 was lost", {"a": 1})
    path = codec.schema_dir() / "retired" / "HistoryEvent.33447ba1d111a15e.avsc"
    schema = orjson.loads(path.read_bytes())
    record = ev.HistoryEvent("wf", 9, old)
    avro = codec._to_avro(record)
    name, body = avro["body"]
    avro["body"] = (name, {k: v for k, v in body.items() if k not in ("continued", "input")})
    buf = io.BytesIO()
    buf.write(codec.MAGIC + bytes.fromhex(path.name.split(".")[1]))
    fastavro.schemaless_writer(buf, parse_schema(schema), avro)
    decoded = codec.decode(buf.getvalue())
    assert decoded == record
    assert isinstance(decoded.body, ev.WorkflowRestarted)
    assert decoded.body.continued is False and decoded.body.input is None


ANNOUNCED = codec.schema_dir() / "retired" / "WorkerAnnounced.8ccd56ccf9cd1d7a.avsc"


def test_an_announcement_written_before_workflows_decodes_with_none() -> None:
    """A worker of the release before announced no ``@workflow``s: its record reads
    with ``workflows`` empty, and a new one names the current schema."""
    fields = {"worker_id": "w", "queue": "cpu", "tasks": ["t"], "concurrency": 2,
              "in_flight": 1, "version": "0.1.0", "host": "h", "pid": 7,
              "started_at_ms": 1, "at_ms": 2, "interval_ms": 1500, "stopping": False}
    data = _old_task_failed(ANNOUNCED, fields)
    decoded = codec.decode(data)
    assert decoded == WorkerAnnounced("w", "cpu", ("t",), 2, 1, "0.1.0", "h", 7, 1, 2, 1500)
    assert decoded.workflows == ()
    assert codec.encode(decoded) != data


TAGLESS = codec.schema_dir() / "retired" / "WorkerAnnounced.a5848b799ae5eb2c.avsc"


def test_an_announcement_written_before_tags_decodes_without_tags() -> None:
    """A worker of the release before announced no tags: its record reads with
    ``tags`` empty (it runs no node that requires any)."""
    fields = {"worker_id": "w", "queue": "cpu", "tasks": ["t"], "concurrency": 2,
              "in_flight": 1, "version": "0.1.0", "host": "h", "pid": 7,
              "started_at_ms": 1, "at_ms": 2, "interval_ms": 1500, "stopping": False,
              "workflows": []}
    data = _old_task_failed(TAGLESS, fields)
    decoded = codec.decode(data)
    assert decoded == WorkerAnnounced("w", "cpu", ("t",), 2, 1, "0.1.0", "h", 7, 1, 2, 1500)
    assert decoded.tags == ()
    assert codec.encode(decoded) != data


TASK_SUCCEEDED = codec.schema_dir() / "retired" / "TaskSucceeded.f97d00b43baf888d.avsc"
HISTORY_BEFORE_CONTINUATION = (codec.schema_dir() / "retired"
                               / "HistoryEvent.1bf2bdde1f28d544.avsc")


def test_a_success_reported_before_continuations_decodes_with_none() -> None:
    """A worker of the release before reported a success without a continuation: it
    reads with none, and the history written before reads the same."""
    fields = {"workflow_id": "wf", "node": "code", "index": 3, "attempt": 1, "at_ms": 9,
              "output": b'{"rows": 2}'}
    decoded = codec.decode(_old_task_failed(TASK_SUCCEEDED, fields))
    assert decoded == ev.TaskSucceeded("wf", "code", 3, 1, 9, {"rows": 2})
    assert decoded.continuation is None
    body = ev.TaskSucceeded("wf", "code", 3, 1, 9, {"rows": 2})
    old = codec.decode(_written_with(HISTORY_BEFORE_CONTINUATION, ev.HistoryEvent("wf", 7, body)))
    assert isinstance(old, ev.HistoryEvent) and old.body == body
    carried = ev.TaskSucceeded("wf", "code", 3, 1, 9, {"rows": 2},
                               {"act": 2, "through": 2, "at_ms": 8, "decision": {"steps": []}})
    assert codec.decode(codec.encode(carried)) == carried
