"""A trigger's body is checked at the edge: defaults filled in, and every fault named by
its field."""

from __future__ import annotations

from typing import Any

import pytest
from trigger_kit import BODY

from services.gateway.triggers.settings import DEFAULT_INPUT, body_faults, parse

SCHEMA: dict[str, Any] = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "string"}, {"name": "n", "type": "int"}]}


def test_the_defaults_are_filled_in() -> None:
    settings = parse("orders", None, BODY)
    assert settings.document == {"topic": "shop.orders", "format": "json", "filter": [],
                                 "input": DEFAULT_INPUT, "id": None, "definition": "ship",
                                 "start": "latest"}
    assert (settings.format, settings.start, settings.id) == ("json", "latest", None)


def test_an_avro_trigger_keeps_its_schema_and_framing() -> None:
    settings = parse("o", "acme", {**BODY, "format": "avro",
                                   "avro": {"schema": SCHEMA, "framing": "plain"}})
    assert settings.tenant == "acme" and settings.framing == "plain"
    assert settings.document["avro"] == {"schema": SCHEMA, "framing": "plain"}
    assert parse("o", None, {**BODY, "format": "avro",
                             "avro": {"schema": SCHEMA}}).framing == "confluent"


@pytest.mark.parametrize(("body", "fault"), [
    ({**BODY, "topics": "x"}, "topics: unknown field"),
    ({"definition": "ship"}, "topic: required"),
    ({**BODY, "topic": "a b"}, "topic: required, a Kafka topic name"),
    ({**BODY, "format": "xml"}, "format: one of json, avro, bytes"),
    ({**BODY, "format": "avro"}, "avro: required with format avro"),
    ({**BODY, "avro": {"schema": SCHEMA}}, "avro: only with format avro"),
    ({**BODY, "format": "avro", "avro": {"schema": SCHEMA, "framing": "x"}},
     "avro.framing: one of confluent, plain, single-object"),
    ({**BODY, "format": "avro", "avro": {"schema": {"type": "nope"}}},
     "avro.schema: not an Avro schema"),
    ({**BODY, "filter": {"pointer": "/value"}}, "filter: a list of"),
    ({**BODY, "filter": [{"pointer": "value/kind", "equals": 1}]}, "filter[0]:"),
    ({**BODY, "input": {"a": "${val.x}"}}, "input: '${val.x}': unknown root 'val'"),
    ({**BODY, "input": "order ${value.x}"}, "a reference must be the whole string"),
    ({**BODY, "id": "fixed"}, "id: a template naming a part of the record"),
    ({**BODY, "id": "o-${nope}"}, "id: 'o-${nope}': unknown root 'nope'"),
    ({**BODY, "definition": "bad name"}, "definition:"),
    ({"topic": "t"}, "definition: required"),
    ({**BODY, "start": "now"}, "start: one of latest, earliest"),
])
def test_each_fault_is_named_by_its_field(body: Any, fault: str) -> None:
    faults = body_faults("orders", body)
    assert any(f.startswith(fault) or fault in f for f in faults), faults
    with pytest.raises(ValueError) as raised:
        parse("orders", None, body)
    assert str(raised.value).split("\n") == faults


def test_every_fault_at_once_and_the_name_too() -> None:
    faults = body_faults("-bad", {"topic": 3, "format": "xml", "start": "x"})
    assert [f.split(":")[0] for f in faults] == ["name", "topic", "format", "definition",
                                                 "start"]
    assert body_faults("x", [1]) == ["body: must be a JSON object with topic and definition"]
