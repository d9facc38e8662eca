"""Avro single-object encoding of every Kafka record, from ``schemas/avro/*.avsc``.

Wire format (Avro 1.11 spec, "Single-object encoding"): the marker ``C3 01``, the
schema's 8-byte CRC-64-AVRO fingerprint (little-endian) of its Parsing Canonical Form,
then the Avro binary body. Every record thus names its schema. Submissions and signals
may also be JSON on Kafka when the record carries ``content-type: application/json``
(``headwater.json_records``).

The records are the workflow records (``headwater.core.events``) and four others: the
definitions registry's (``headwater.core.definitions``), the workers' announcements
(``headwater.announcement``), the task logs' (``headwater.log_lines``) and the webhooks'
(``headwater.webhooks``). A field that
holds a JSON document is an Avro ``bytes`` (``JSON_FIELDS``); an Avro ``array`` is a
tuple in the record, of records of their own type for the fields in ``RECORD_ARRAYS``.
"""

from __future__ import annotations

import dataclasses
import io
import math
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

import fastavro
import orjson
from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form

from headwater.announcement import AnnouncedWorkflow, WorkerAnnounced
from headwater.core import events as ev
from headwater.core import registry
from headwater.core.definitions import DefinitionHead, DefinitionStored
from headwater.errors import DecodeError
from headwater.log_lines import LogLine, TaskLogLines
from headwater.operations import OperationRecorded
from headwater.trigger_records import TriggerStored
from headwater.webhooks import WebhookStored

MAGIC = b"\xc3\x01"
HEADER_SIZE = 10
NAMESPACE = "headwater"
# Avro ``bytes`` fields that carry a JSON document.
JSON_FIELDS = frozenset({"spec", "input", "output", "checkpoint", "chunk", "fields",
                         "input_schema", "rerun", "continuation", "source",
                         "settings", "filter", "parent", "operation"})
INT_RANGE = range(-(2**31), 2**31)
"""The values of an Avro ``int`` (32-bit signed, Avro 1.11 spec, "Primitive Types").
fastavro writes any Python integer into one, so the codec refuses the others."""
MAX_JSON_DEPTH = 200
"""Deepest nesting of arrays and objects in a JSON field (the outermost is level 1),
encoding and decoding alike. orjson writes at most 254 levels (its recursion limit) and
reads up to 1024; the coordinator's table entries, the projection's rows and the HTTP
documents put a few levels around a field's value. A value nested deeper than this
could be read but not written again: a submission whose spec was nested 254 levels
deep made every batch that held it fail, and the coordinator restarted for ever. Over
HTTP the gateway takes at most 64 levels."""

RECORD_TYPES: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in (
        ev.WorkflowSubmitted, ev.CancelRequested, ev.TimerFired, ev.TaskDispatched,
        ev.TaskStarted, ev.TaskProgressed, ev.TaskSucceeded, ev.TaskFailed,
        ev.WorkflowAccepted, ev.TimerScheduled, ev.NodeFinished,
        ev.WorkflowSucceeded, ev.WorkflowFailed, ev.WorkflowCancelled, ev.HistoryEvent,
        ev.TaskHeartbeated, ev.TaskCheckpointed, ev.TaskOutputStreamed, ev.TaskCancelled,
        ev.ReportDiscarded, ev.SignalSent, ev.ChildSubmitted, ev.ConditionEvaluated,
        ev.WorkflowRestarted, ev.NodeReused, ev.TaskReused, ev.TaskHeld, ev.PermitGranted,
        ev.PermitDenied, ev.PermitsReturned, ev.TaskLookedUp, ev.CacheAnswered, ev.TaskCached,
        ev.CacheReturned, ev.DeadlineSet, ev.CallerLinked, ev.CallLinked,
        ev.PauseRequested, ev.ResumeRequested, ev.WorkflowPaused,
        ev.WorkflowResumed, ev.DispatchDeferred, ev.TimerDeferred, ev.DispatchRecalled,
        *registry.event_units(),
        DefinitionStored, DefinitionHead, WorkerAnnounced, TaskLogLines,
        TriggerStored,
        WebhookStored,
        OperationRecorded,
    )
}
"""Schema name -> its record type: the inputs, the common history events, every node
kind's events (from the registry, ``KindUnit.events``), and the records of the
definitions registry, of the workers' announcements, of the task logs, of the
triggers and of the bulk operations."""
RECORD_ARRAYS: dict[str, type[Any]] = {"lines": LogLine, "workflows": AnnouncedWorkflow}
"""Array fields whose items are records: the field's name -> the items' type."""


def schema_dir() -> Path:
    """Where the ``.avsc`` files are: ``HEADWATER_SCHEMA_DIR`` or ``<repo>/schemas/avro``."""
    override = os.environ.get("HEADWATER_SCHEMA_DIR")
    return Path(override) if override else Path(__file__).resolve().parents[1] / "schemas" / "avro"


@dataclasses.dataclass(frozen=True)
class _Schema:
    name: str
    parsed: Any
    header: bytes
    reader: Any = None
    """For a retired schema: the current one, into which its records are read."""
    ints: tuple[str, ...] = ()
    """The fields that are an Avro ``int`` (or null or one)."""
    arrays: tuple[str, ...] = ()
    """The fields that are an Avro ``array``: tuples in the record."""


@cache
def _schemas() -> tuple[dict[str, _Schema], dict[bytes, _Schema]]:
    docs = {p.stem: orjson.loads(p.read_bytes()) for p in sorted(schema_dir().glob("*.avsc"))}
    by_name: dict[str, _Schema] = {}
    for name, doc in docs.items():
        # Parsed with fastavro's hint (its default): a schema without it is parsed again
        # on every read and write, ten times the cost (HistoryEvent: 117 us against 12 us
        # to write, 84 against 9 to read). The fingerprint is the same either way.
        parsed = parse_schema(inline(doc, docs))
        fp = fingerprint(to_parsing_canonical_form(parsed), "CRC-64-AVRO")
        by_name[name] = _Schema(name, parsed, MAGIC + bytes.fromhex(fp),
                                ints=_fields_of(parsed, "int"),
                                arrays=_fields_of(parsed, "array"))
    by_header = {s.header: s for s in by_name.values()}
    for retired in _retired(by_name):
        by_header.setdefault(retired.header, retired)
    return by_name, by_header


def _fields_of(parsed: Any, avro_type: str) -> tuple[str, ...]:
    """The names of a record schema's fields of ``avro_type``, alone or in a union."""
    out = []
    for field in parsed["fields"]:
        members = field["type"] if isinstance(field["type"], list) else [field["type"]]
        if any(m == avro_type or (isinstance(m, dict) and m.get("type") == avro_type)
               for m in members):
            out.append(field["name"])
    return tuple(out)


def _retired(current: dict[str, _Schema]) -> list[_Schema]:
    """The retired schemas (``retired/<Name>.<fingerprint>.avsc``, fully inlined): records
    written with one are still read, resolved into the current schema of that name (Avro
    1.11 spec, "Schema Resolution": a union that gained members, a record that gained
    fields with defaults). So a history written before a schema changed can be replayed."""
    out = []
    for path in sorted((schema_dir() / "retired").glob("*.avsc")):
        name = path.name.split(".", 1)[0]
        if name not in current:
            continue
        parsed = parse_schema(orjson.loads(path.read_bytes()))
        fp = fingerprint(to_parsing_canonical_form(parsed), "CRC-64-AVRO")
        now = current[name]
        out.append(_Schema(name, parsed, MAGIC + bytes.fromhex(fp), now.parsed,
                           now.ints, now.arrays))
    return out


def inline(doc: Any, docs: dict[str, Any]) -> Any:
    """Replace references to other records (``"headwater.X"``) by their definitions
    (``docs``: every schema document by name), as a retired schema is kept."""
    prefix = NAMESPACE + "."
    if isinstance(doc, str) and doc.startswith(prefix) and doc[len(prefix):] in docs:
        return docs[doc[len(prefix):]]
    if isinstance(doc, list):
        return [inline(d, docs) for d in doc]
    if isinstance(doc, dict):
        return {k: inline(v, docs) if k in ("type", "fields") else v for k, v in doc.items()}
    return doc


def fingerprint_header(record_type: str) -> bytes:
    """The 10-byte single-object header of ``record_type`` (e.g. ``"TaskSucceeded"``)."""
    return _schemas()[0][record_type].header


def json_text(value: Any) -> bytes:
    """``value`` as JSON, refusing what JSON cannot hold. orjson writes a NaN or an
    infinity as ``null``, which would change a task's output without a word; such a float
    is looked for only when the text holds a ``null``.

    Raises:
        TypeError: ``value`` is not JSON: a type JSON has no form for (orjson's
            ``JSONEncodeError``, a ``TypeError``), or a NaN or infinite float.
    """
    text = orjson.dumps(value)
    if b"null" in text and _non_finite(value):
        raise TypeError("NaN and Infinity are not JSON (orjson would write null)")
    return text


def _non_finite(value: Any) -> bool:
    """Whether a float that is NaN or infinite sits anywhere in ``value`` (no recursion:
    a value orjson encoded is at most 254 levels deep, but a stack costs nothing)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def json_depth_fault(value: Any, text: bytes) -> str | None:
    """Why ``value`` (a JSON field, ``text`` its encoding) may not travel, or None.

    Returns:
        ``"JSON nested deeper than <MAX_JSON_DEPTH> levels"`` when its arrays and objects
        nest deeper than ``MAX_JSON_DEPTH``, else None.
    """
    if text.count(b"[") + text.count(b"{") <= MAX_JSON_DEPTH:
        return None  # too few brackets to nest that deep (counted in C, no walk)
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_JSON_DEPTH:
            return f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return None


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    """A record class's field names, in order (``dataclasses.fields`` is slow to ask)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _to_avro(record: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    schema = _schemas()[0][type(record).__name__]
    for name in _field_names(type(record)):
        value = getattr(record, name)
        if name in JSON_FIELDS:
            value = _json_field(type(record).__name__, name, value)
        elif name == "body":
            value = (f"{NAMESPACE}.{type(value).__name__}", _to_avro(value))
        elif name in RECORD_ARRAYS:
            value = [_item_to_avro(type(record).__name__, item) for item in value]
        out[name] = value
    for name in schema.ints:
        value = out[name]
        if type(value) is int and value not in INT_RANGE:
            raise ValueError(f"{type(record).__name__} does not fit its schema: {name}: "
                             f"{value} is beyond an Avro int (32 bits)")
    return out


def _item_to_avro(owner: str, item: Any) -> dict[str, Any]:
    """An item of a ``RECORD_ARRAYS`` field as Avro: its ``JSON_FIELDS`` as JSON text."""
    out: dict[str, Any] = {}
    for key in _field_names(type(item)):
        value = getattr(item, key)
        out[key] = _json_field(owner, key, value) if key in JSON_FIELDS else value
    return out


def _json_field(owner: str, name: str, value: Any) -> bytes:
    """A ``JSON_FIELDS`` value as its JSON text (``owner``'s field ``name``).

    Raises:
        ValueError: it is nested deeper than ``MAX_JSON_DEPTH``.
    """
    text = orjson.dumps(value)
    fault = json_depth_fault(value, text)
    if fault is not None:
        raise ValueError(f"{owner} does not fit its schema: {name}: {fault}")
    return text


def _item_from_avro(owner: str, item: dict[str, Any]) -> dict[str, Any]:
    """An item of a ``RECORD_ARRAYS`` field from Avro: its ``JSON_FIELDS`` parsed."""
    out: dict[str, Any] = {}
    for key, value in item.items():
        if key in JSON_FIELDS and value is not None:
            text, value = value, orjson.loads(value)
            fault = json_depth_fault(value, text)
            if fault is not None:
                raise DecodeError(f"bad {owner} body: {key}: {fault}")
        out[key] = value
    return out


INTERNED_FIELDS = frozenset({"node", "worker"})
"""String fields decoded as one shared copy per value (``sys.intern``): a node id and a
worker id come in every report of a task, and a wide map's state keeps a task per item,
each of which held its own copies (decoding and folding the ``TaskStarted`` of 100,000
items grew the state by 9.4 MiB, 3.5 interned). Some CPython 3.12 releases keep interned
strings for good; node ids and worker ids are few, so that would cost little."""


def interned(key: str, value: Any) -> Any:
    """``value`` as the one shared copy of it when ``key`` is one of
    ``INTERNED_FIELDS`` and it is a string; as it is otherwise. The coordinator's table
    reads tasks back through it too (``services.coordinator.snapshot.task_from``)."""
    return sys.intern(value) if key in INTERNED_FIELDS and isinstance(value, str) else value


def _from_avro(name: str, data: dict[str, Any]) -> Any:
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        value = interned(key, value)
        if key in JSON_FIELDS and value is not None:  # None: a nullable one's default
            text, value = value, orjson.loads(value)
            fault = json_depth_fault(value, text)
            if fault is not None:
                raise DecodeError(f"bad {name} body: {key}: {fault}")
        elif key == "body":
            body_name, body = value
            value = _from_avro(body_name.rsplit(".", 1)[-1], body)
        elif key in RECORD_ARRAYS:
            value = tuple(RECORD_ARRAYS[key](**_item_from_avro(name, item)) for item in value)
        kwargs[key] = value
    for key in _schemas()[0][name].arrays:
        kwargs[key] = tuple(kwargs[key])
    return RECORD_TYPES[name](**kwargs)


def encode(record: Any) -> bytes:
    """Encode a record dataclass of ``RECORD_TYPES``.

    Raises:
        KeyError: the record's type has no schema.
        ValueError: a field does not fit its schema (e.g. a non-JSON output, one nested
            deeper than ``MAX_JSON_DEPTH``, an integer beyond an Avro ``int``).
    """
    schema = _schemas()[0][type(record).__name__]
    buf = io.BytesIO()
    buf.write(schema.header)
    try:
        fastavro.schemaless_writer(buf, schema.parsed, _to_avro(record))
    except (TypeError, OverflowError, orjson.JSONEncodeError) as e:
        raise ValueError(f"{type(record).__name__} does not fit its schema: {e}") from e
    return buf.getvalue()


def decode(data: bytes | None) -> Any:
    """Decode single-object Avro bytes into the record dataclass they name.

    Raises:
        DecodeError: no ``C3 01`` marker, an unknown fingerprint, or a body that does
            not match the schema (truncated, garbage, invalid JSON inside, JSON nested
            deeper than ``MAX_JSON_DEPTH``).
    """
    schema, data = _schema_of(data)
    buf = io.BytesIO(data)
    buf.seek(HEADER_SIZE)
    try:
        value = fastavro.schemaless_reader(buf, schema.parsed, schema.reader,
                                           return_record_name=True)
        if buf.tell() != len(data):
            raise DecodeError(f"{len(data) - buf.tell()} trailing bytes after {schema.name}")
        return _from_avro(schema.name, value)  # type: ignore[arg-type]
    except DecodeError:
        raise
    except Exception as e:  # fastavro raises many types on bad input; all mean the same
        raise DecodeError(f"bad {schema.name} body: {type(e).__name__}: {e}") from e


def record_type(data: bytes | None) -> str:
    """The name of the record type (a key of ``RECORD_TYPES``) that single-object Avro
    bytes name in their header; the body is not read.

    Raises:
        DecodeError: no ``C3 01`` marker, or an unknown fingerprint.
    """
    return _schema_of(data)[0].name


def _schema_of(data: bytes | None) -> tuple[_Schema, bytes]:
    """The schema that ``data`` names, and ``data`` (never None)."""
    if data is None or len(data) < HEADER_SIZE or data[:2] != MAGIC:
        raise DecodeError("not Avro single-object encoded (no C3 01 marker)")
    schema = _schemas()[1].get(bytes(data[:HEADER_SIZE]))
    if schema is None:
        raise DecodeError(f"unknown schema fingerprint {bytes(data[2:HEADER_SIZE]).hex()}")
    return schema, data
