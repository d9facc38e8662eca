"""Records that producers other than Headwater's send as JSON on Kafka
(``content-type: application/json``): a submission on ``submissions``, a signal on
``control``. Each is read into the same record as its Avro form (``codec``), and refused
with a ``DecodeError`` naming the fault: not JSON, a field missing or of the wrong type,
a JSON field nested deeper than ``codec.MAX_JSON_DEPTH``, an integer outside 64 bits.
Whether the values make sense (a tenant's length, a definition's name) is for the
coordinator to check, for Avro and JSON alike (``services.coordinator.inputs``)."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from headwater.codec import json_depth_fault
from headwater.core import events as ev
from headwater.errors import DecodeError

_LONG_DIGITS = re.compile(rb"\d{19}")
"""A run of digits as long as the longest 64-bit integer: only then can a JSON integer be
out of range (orjson reads one as a float, silently)."""


def _require_int64(data: bytes) -> None:
    """Raise ``DecodeError`` when a JSON text holds an integer outside the signed 64-bit
    range, which Avro, the state and the projection cannot hold (as the gateway answers
    422); read again with the standard library, which keeps integers whole."""

    def checked(text: str) -> int:
        value = int(text)
        if not -(1 << 63) <= value < (1 << 63):
            raise DecodeError(f"integer outside the signed 64-bit range: {text[:40]}")
        return value

    try:
        json.loads(data, parse_int=checked)
    except ValueError as e:  # json's own errors: orjson read it, so they cannot happen
        raise DecodeError(f"not JSON: {e}") from e


def _json_document(data: bytes | None, what: str) -> tuple[dict[str, Any], str, int]:
    """A JSON record's object, its ``workflow_id`` and its ``at_ms``.

    Raises:
        DecodeError: not JSON, not an object, or ``workflow_id`` or ``at_ms`` missing or
            of the wrong type.
    """
    try:
        doc = orjson.loads(data or b"")
    except orjson.JSONDecodeError as e:
        raise DecodeError(f"not JSON: {e}") from e
    if _LONG_DIGITS.search(data or b""):
        _require_int64(data or b"")
    if not isinstance(doc, dict):
        raise DecodeError(f"a JSON {what} must be an object")
    wid, at_ms = doc.get("workflow_id"), doc.get("at_ms")
    if not isinstance(wid, str) or not wid:
        raise DecodeError("workflow_id: required, a non-empty string")
    if type(at_ms) is not int:
        raise DecodeError("at_ms: required, integer milliseconds since the epoch")
    return doc, wid, at_ms


def _require_shallow(doc: dict[str, Any], data: bytes | None, names: tuple[str, ...]) -> None:
    """Raise ``DecodeError`` when a JSON field among ``names`` nests too deep."""
    for name in names:
        fault = json_depth_fault(doc.get(name), data or b"")
        if fault is not None:
            raise DecodeError(f"{name}: {fault}")


def decode_json_submission(data: bytes | None) -> ev.WorkflowSubmitted:
    """Decode a JSON ``WorkflowSubmitted`` (``content-type: application/json``).

    The document is ``{"workflow_id", "spec", "input"?, "tenant"?, "at_ms",
    "definition"?, "definition_version"?}``, the fields of the Avro record.

    Their values (a tenant's length, a definition's name, a version's range) are for
    the coordinator to check, the same for Avro and JSON
    (``services.coordinator.inputs.submission_fault``).

    Raises:
        DecodeError: not JSON, fields missing or of the wrong type (``tenant`` and
            ``definition`` strings, ``definition_version`` an integer), or a ``spec`` or
            ``input`` nested deeper than ``MAX_JSON_DEPTH``.
    """
    doc, wid, at_ms = _json_document(data, "submission")
    tenant, definition = doc.get("tenant"), doc.get("definition")
    version = doc.get("definition_version")
    if tenant is not None and not isinstance(tenant, str):
        raise DecodeError("tenant: must be a string")
    if definition is not None and not isinstance(definition, str):
        raise DecodeError("definition: must be a string")
    if version is not None and type(version) is not int:
        raise DecodeError("definition_version: must be null or an integer")
    if "spec" not in doc:
        raise DecodeError("spec: required")
    _require_shallow(doc, data, ("spec", "input"))
    return ev.WorkflowSubmitted(wid, doc["spec"], doc.get("input"), at_ms, tenant,
                                definition=definition, definition_version=version)


def decode_json_signal(data: bytes | None) -> ev.SignalSent:
    """Decode a JSON ``SignalSent`` (``content-type: application/json``, on ``control``).

    The document is ``{"workflow_id", "name", "at_ms", "index"?, "signal_id"?,
    "fields"?}``, the fields of the Avro record; whether the workflow has a wait for it
    is for the coordinator to tell (``headwater.core.signals``).

    Raises:
        DecodeError: not JSON, fields missing or of the wrong type (``index`` a
            non-negative integer or null, ``signal_id`` a string), or ``fields`` nested
            deeper than ``MAX_JSON_DEPTH``.
    """
    doc, wid, at_ms = _json_document(data, "signal")
    name, index, signal_id = doc.get("name"), doc.get("index"), doc.get("signal_id", "")
    if not isinstance(name, str) or not name:
        raise DecodeError("name: required, a non-empty string")
    if index is not None and (type(index) is not int or not 0 <= index < 2**31):
        raise DecodeError("index: must be null or an integer from 0 to 2**31 - 1")
    if not isinstance(signal_id, str):
        raise DecodeError("signal_id: must be a string")
    _require_shallow(doc, data, ("fields",))
    return ev.SignalSent(wid, name, at_ms, index, signal_id, doc.get("fields"))
