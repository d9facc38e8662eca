"""A trigger's settings: the body of ``PUT /v1/triggers/{name}``, checked at the edge.

A trigger names an existing Kafka ``topic`` and how to read its records (``format``:
``json``, ``avro`` with the schema given here, or ``bytes``), which of them start a run
(``filter``: JSON-pointer equalities over the record, all of which must hold), what
each run's input is (``input``: a template of ``${...}`` references over the record, as
a spec's references over a run's input), its run id (``id``: a template; by default
derived from the topic, partition and offset) and the definition the runs are of
(``definition``: ``name`` or ``name@version``). ``start`` says where a new trigger
begins reading: ``latest`` (the default: records produced from now on) or ``earliest``.

The checks here are pure: whether the definition exists is for the routes to ask
(``api.py``); whether the topic exists is the consumer's to find out (a topic created
later is read once it exists).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import fastavro
import orjson

from headwater.core.definitions import NAME_PATTERN, DefinitionRefError, parse_ref
from services.gateway.triggers.templates import reference_faults

FORMATS = ("json", "avro", "bytes")
"""How a record's value is read: JSON (UTF-8), Avro with the trigger's schema, or bytes
(the value is their base64 text)."""
FRAMINGS = ("confluent", "plain", "single-object")
"""How an Avro value is framed: ``confluent`` (the Confluent wire format: a zero byte
and a 4-byte schema id, not looked up: the trigger's schema reads every record),
``plain`` (the binary body alone, fastavro's schemaless form) or ``single-object``
(Avro's ``C3 01`` and the schema's fingerprint, which must be the trigger's schema's)."""
STARTS = ("latest", "earliest")
"""Where a trigger's consumer group starts when it has no committed offset."""
DEFAULT_INPUT = "${value}"
"""A trigger's input unless it says otherwise: the record's decoded value."""
TOPIC_PATTERN = re.compile(r"^[A-Za-z0-9._\-]{1,249}$")
"""Kafka's rule for topic names."""
NAME = re.compile(NAME_PATTERN)
"""A trigger's name: a definition's rule (1-100 letters, digits and ``_.-``)."""
MAX_FILTERS = 20
"""The most equalities a filter holds."""
KEYS = frozenset({"topic", "format", "avro", "filter", "input", "id", "definition", "start"})
"""The fields of a trigger's body."""


@dataclass(frozen=True)
class Equality:
    """One condition of a filter: the value at ``pointer`` (RFC 6901, over ``{value,
    key, headers, topic, partition, offset, timestamp}``) equals ``equals``."""

    pointer: str
    equals: Any


@dataclass(frozen=True)
class TriggerSettings:
    """A trigger, as checked (``parse``).

    Attributes:
        name: its name.
        tenant: the tenant it belongs to (None: none).
        topic: the topic it reads.
        format: one of ``FORMATS``.
        avro_schema: the Avro schema (parsed by fastavro) when ``format`` is avro.
        framing: one of ``FRAMINGS`` when ``format`` is avro.
        filter: the equalities a record must meet to start a run (none: every record).
        input: the run's input template.
        id: the run id template, or None (``mapping.default_id``).
        definition: the definition reference.
        start: one of ``STARTS``.
        document: the body as stored (``TriggerStored.settings``) and shown.
    """

    name: str
    tenant: str | None
    topic: str
    format: str
    avro_schema: Any
    framing: str
    filter: tuple[Equality, ...]
    input: Any
    id: str | None
    definition: str
    start: str
    document: dict[str, Any]


def parse(name: str, tenant: str | None, doc: Any) -> TriggerSettings:
    """Check a trigger's body.

    Args:
        name: the trigger's name (the path's).
        tenant: whose it is.
        doc: the body, read from JSON.

    Returns:
        The settings; ``document`` holds the body with its defaults filled in.

    Raises:
        ValueError: naming every fault, one per line (``faults``).
    """
    faults = body_faults(name, doc)
    if faults:
        raise ValueError("\n".join(faults))
    avro = doc.get("avro") or {}
    document = {"topic": doc["topic"], "format": doc.get("format", "json"),
                "filter": doc.get("filter", []), "input": doc.get("input", DEFAULT_INPUT),
                "id": doc.get("id"), "definition": doc["definition"],
                "start": doc.get("start", "latest")}
    if document["format"] == "avro":
        document["avro"] = {"schema": avro["schema"],
                            "framing": avro.get("framing", "confluent")}
    schema = (fastavro.parse_schema(avro["schema"]) if document["format"] == "avro" else None)
    return TriggerSettings(
        name, tenant, document["topic"], document["format"], schema,
        avro.get("framing", "confluent"),
        tuple(Equality(f["pointer"], f["equals"]) for f in document["filter"]),
        document["input"], document["id"], document["definition"], document["start"],
        document)


def body_faults(name: str, doc: Any) -> list[str]:
    """Every fault of a trigger's name and body, each naming its field."""
    faults = [] if NAME.fullmatch(name) else [
        f"name: {name[:120]!r} is not 1-100 letters, digits and _.- starting with a letter "
        "or digit"]
    if not isinstance(doc, dict):
        return [*faults, "body: must be a JSON object with topic and definition"]
    faults += [f"{k}: unknown field (fields: {', '.join(sorted(KEYS))})"
               for k in sorted(set(doc) - KEYS)]
    topic = doc.get("topic")
    if not isinstance(topic, str) or not TOPIC_PATTERN.fullmatch(topic):
        faults.append("topic: required, a Kafka topic name (1-249 letters, digits and ._-)")
    faults += _format_faults(doc)
    faults += _filter_faults(doc.get("filter", []))
    faults += [f"input: {f}" for f in reference_faults(doc.get("input", DEFAULT_INPUT))]
    run_id = doc.get("id")
    if run_id is not None and (not isinstance(run_id, str) or "${" not in run_id):
        faults.append("id: a template naming a part of the record, such as "
                      "\"order-${value.order_id}\" or \"${key}\" (null: derived from the "
                      "topic, partition and offset)")
    elif run_id is not None:
        faults += [f"id: {f}" for f in reference_faults(run_id, interpolated=True)]
    definition = doc.get("definition")
    try:
        if not isinstance(definition, str):
            raise DefinitionRefError("required, a definition's name or name@version")
        parse_ref(definition)
    except DefinitionRefError as e:
        faults.append(f"definition: {e}")
    if doc.get("start", "latest") not in STARTS:
        faults.append(f"start: one of {', '.join(STARTS)}")
    return faults


def _format_faults(doc: dict[str, Any]) -> list[str]:
    fmt, avro = doc.get("format", "json"), doc.get("avro")
    if fmt not in FORMATS:
        return [f"format: one of {', '.join(FORMATS)}"]
    if fmt != "avro":
        return [] if avro is None else ["avro: only with format avro"]
    if not isinstance(avro, dict) or "schema" not in avro:
        return ["avro: required with format avro: {schema, framing?}"]
    faults = [f"avro.{k}: unknown field (fields: framing, schema)"
              for k in sorted(set(avro) - {"schema", "framing"})]
    if avro.get("framing", "confluent") not in FRAMINGS:
        faults.append(f"avro.framing: one of {', '.join(FRAMINGS)}")
    try:
        fastavro.parse_schema(avro["schema"])
    except Exception as e:  # fastavro raises several types for a bad schema
        faults.append(f"avro.schema: not an Avro schema: {e}")
    return faults


def _filter_faults(conditions: Any) -> list[str]:
    shape = ("filter: a list of {\"pointer\": \"/value/kind\", \"equals\": <JSON value>} "
             f"(at most {MAX_FILTERS})")
    if not isinstance(conditions, list) or len(conditions) > MAX_FILTERS:
        return [shape]
    faults = []
    for i, c in enumerate(conditions):
        if (not isinstance(c, dict) or set(c) != {"pointer", "equals"}
                or not isinstance(c["pointer"], str) or not c["pointer"].startswith("/")):
            faults.append(f"filter[{i}]: {{\"pointer\": \"/...\", \"equals\": <JSON value>}}")
    return faults


def stored_json(settings: TriggerSettings) -> bytes:
    """The settings' document as JSON (what a ``PUT`` compares to tell a change)."""
    return orjson.dumps(settings.document, option=orjson.OPT_SORT_KEYS)
