"""A record made into its run: the filter, the input template, the run id (derived from
topic, partition and offset, or from the record by a template), and the faults that
dead-letter a record, each named."""

from __future__ import annotations

import orjson
import pytest
from trigger_kit import record, trigger

from services.gateway.triggers.mapping import Mapped, default_id, map_record
from services.gateway.triggers.templates import MappingError, at_pointer, interpolate, render

ORDER = {"kind": "order", "order": {"id": "A-1", "n": 3, "items": [{"sku": "x"}]}}


def _json(value: object) -> bytes:
    return orjson.dumps(value)


def test_the_whole_value_is_the_input_by_default_and_the_id_is_derived() -> None:
    mapped = map_record(trigger(), record(_json(ORDER), offset=41, partition=3))
    assert mapped == Mapped("trigger:orders:shop.orders:3:41", ORDER)


def test_the_same_record_read_twice_gives_the_same_run() -> None:
    settings = trigger(input={"n": "${value.order.n}"})
    first = map_record(settings, record(_json(ORDER)))
    assert first == map_record(settings, record(_json(ORDER)))
    assert first != map_record(settings, record(_json(ORDER), offset=8))


def test_the_input_template_reads_every_part_of_the_record() -> None:
    settings = trigger(input={
        "order": "${value.order.id}", "sku": "${value.order.items.0.sku}", "key": "${key}",
        "source": "${headers.source}", "at": ["${topic}", "${partition}", "${offset}",
                                              "${timestamp}"],
        "text": "kept as written", "whole": "${value}"})
    mapped = map_record(settings, record(_json(ORDER), headers=(("source", b"web"),)))
    assert mapped is not None and mapped.input == {
        "order": "A-1", "sku": "x", "key": "k1", "source": "web",
        "at": ["shop.orders", 2, 7, 1_722_000_000_000],
        "text": "kept as written", "whole": ORDER}


def test_a_run_id_from_the_record() -> None:
    settings = trigger(id="order-${value.order.id}-${value.order.n}")
    assert map_record(settings, record(_json(ORDER))) == Mapped("order-A-1-3", ORDER)
    keyed = trigger(id="${key}")
    assert map_record(keyed, record(_json(ORDER), key=b"cust-9")).run_id == "cust-9"


@pytest.mark.parametrize(("settings_fields", "value", "fault"), [
    ({}, b"{not json", "value: not JSON"),
    ({"input": {"n": "${value.order.qty}"}}, _json(ORDER),
     "input: ${value.order.qty}: value.order has no 'qty'"),
    ({"input": "${value.x}"}, _json([1]), "input: ${value.x}: value has no 'x'"),
    ({"id": "o-${value.order}"}, _json(ORDER), "id: ${value.order}: a dict, not a string"),
    ({"id": "${value.kind} x"}, _json(ORDER), "id: 'order x' is not a workflow id"),
    ({"id": "o-${value.missing}"}, _json(ORDER), "id: ${value.missing}: value has no"),
])
def test_a_record_that_cannot_be_mapped_is_named(settings_fields: dict[str, object],
                                                 value: bytes, fault: str) -> None:
    with pytest.raises(MappingError) as raised:
        map_record(trigger(**settings_fields), record(value))
    assert str(raised.value).startswith(fault), raised.value


def test_the_filter_lets_only_equal_records_through() -> None:
    settings = trigger(filter=[{"pointer": "/value/kind", "equals": "order"},
                               {"pointer": "/value/order/n", "equals": 3.0}])
    assert map_record(settings, record(_json(ORDER))) is not None
    assert map_record(settings, record(_json({**ORDER, "kind": "refund"}))) is None
    assert map_record(settings, record(_json({"kind": "order"}))) is None  # no order.n
    by_header = trigger(filter=[{"pointer": "/headers/type", "equals": "a"}])
    assert map_record(by_header, record(_json(1), headers=(("type", b"a"),))) is not None
    assert map_record(by_header, record(_json(1))) is None
    flag = trigger(filter=[{"pointer": "/value/on", "equals": True}])
    assert map_record(flag, record(_json({"on": 1}))) is None  # true is not 1
    assert map_record(flag, record(_json({"on": True}))) is not None


def test_a_filtered_record_need_not_be_mappable() -> None:
    settings = trigger(filter=[{"pointer": "/value/kind", "equals": "order"}],
                       input={"n": "${value.order.n}"})
    assert map_record(settings, record(_json({"kind": "ping"}))) is None


def test_ids_stay_within_200_characters_and_apart_by_tenant() -> None:
    long_topic = "t" * 240
    run_id = default_id(trigger(), long_topic, 1, 2)
    assert len(run_id) <= 200 and run_id.startswith("trigger:orders:")
    assert run_id != default_id(trigger(), long_topic + "x", 1, 2)
    acme = default_id(trigger(tenant="acme"), "shop.orders", 1, 2)
    other = default_id(trigger(tenant="other"), "shop.orders", 1, 2)
    assert acme != other != default_id(trigger(), "shop.orders", 1, 2)
    assert acme.startswith("trigger:orders:") and acme.endswith(":shop.orders:1:2")


def test_the_templates_alone() -> None:
    view = {"value": {"a": [10, {"b": None}]}, "key": "k"}
    assert render({"x": ["${value.a.1.b}", "${ key }"]}, view) == {"x": [None, "k"]}
    assert interpolate("${key}-${value.a.0}", view) == "k-10"
    assert at_pointer(view, "/value/a/0") == (True, 10)
    assert at_pointer(view, "/value/a/5") == (False, None)
    assert at_pointer({"value": {"a/b": 1, "m~n": 2}}, "/value/a~1b") == (True, 1)
    assert at_pointer({"value": {"m~n": 2}}, "/value/m~0n") == (True, 2)
