"""The node-kind registry is complete: every registered kind has every part it needs.

A kind is one unit (``headwater/core/kinds/``); what it declares there (spec fields and
parser, machine rules, history events with their ``evolve`` handlers, timeline details and
live-view lines) is checked on the unit, and what the readers of its events keep outside
the core is checked in each reader's table: an Avro schema and its place in
``HistoryEvent.avsc``'s body union, the ``events.Body`` union, a codec record type (taken
from the registry), a projection statement and the audit's expected rows.
``missing_parts`` names each missing part with its kind; the last tests build a
throw-away kind that lacks one part and see exactly that part named.
"""

from __future__ import annotations

import dataclasses
import shutil
import typing
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import orjson
import pytest

from headwater import codec
from headwater.core import events as ev
from headwater.core import registry
from headwater.core.evolve import EVENT_HANDLERS
from headwater.core.registry import KindUnit
from headwater.core.spec import NodeKind
from headwater.core.spec.kinds import KIND_KEYS, KIND_PARSERS
from ops import expected_rows
from services.projector import writer


def missing_parts(unit: KindUnit) -> list[str]:
    """Every part ``unit`` lacks, each as ``"kind <kind>: <what is missing>"``."""
    where = f"kind {unit.kind.value}"
    missing = [f"{where}: no {rule} rule" for rule in ("start", "attempt_succeeded",
                                                       "attempt_failed")
               if not callable(getattr(unit, rule))]
    if KIND_KEYS.get(unit.kind, unit.keys) != unit.keys:
        missing.append(f"{where}: spec.kinds.KIND_KEYS holds other fields")
    if not callable(unit.parse):
        missing.append(f"{where}: no spec parser")
    elif KIND_PARSERS.get(unit.kind, unit.parse) is not unit.parse:
        missing.append(f"{where}: spec.kinds.KIND_PARSERS holds another parser")
    if unit.timer_prefix is not None and not callable(unit.timer_fired):
        missing.append(f"{where}: timer {unit.timer_prefix}: no timer_fired rule")
    for event, handler in unit.events.items():
        missing += [f"{where}: {event.__name__} has no {part}"
                    for part, present in _event_parts(unit, event, handler) if not present]
    return missing


def _event_parts(unit: KindUnit, event: type[Any], handler: Any) -> list[tuple[str, bool]]:
    """``(part, present)`` for each part a node kind's history event needs."""
    name = event.__name__
    return [
        ("evolve handler", callable(handler)),
        ("timeline description (KindUnit.describe)", callable(unit.describe.get(event))),
        ("live-view line (KindUnit.follow, None for none)", event in unit.follow),
        (f"Avro schema (schemas/avro/{name}.avsc)", (codec.schema_dir() / f"{name}.avsc")
         .is_file()),
        ("place in the body union of schemas/avro/HistoryEvent.avsc",
         f"{codec.NAMESPACE}.{name}" in _history_event_bodies()),
        ("place in the events.Body union (headwater/core/events/history.py)",
         event in typing.get_args(ev.Body)),
        ("codec record type (headwater/codec.py RECORD_TYPES)",
         codec.RECORD_TYPES.get(name) is event),
        ("projection statement (services/projector, writer.PROJECTED_EVENTS)",
         event in writer.PROJECTED_EVENTS),
        ("expected audit rows (ops/expected_rows.py KIND_RULES, NODE_ROWS or UNAUDITED)",
         event in expected_rows.KIND_RULES or event in expected_rows.NODE_ROWS
         or event in expected_rows.UNAUDITED),
    ]


def _history_event_bodies() -> list[str]:
    """The body union of ``HistoryEvent.avsc`` (its named types)."""
    doc = orjson.loads((codec.schema_dir() / "HistoryEvent.avsc").read_bytes())
    body = next(f for f in doc["fields"] if f["name"] == "body")
    return [t for t in body["type"] if isinstance(t, str)]


def test_every_node_kind_is_registered_once() -> None:
    assert [u.kind for u in registry.units()] == list(dict.fromkeys(
        u.kind for u in registry.units()))
    assert {u.kind for u in registry.units()} == set(NodeKind)


@pytest.mark.parametrize("unit", registry.units(), ids=lambda u: u.kind.value)
def test_every_registered_kind_has_every_part(unit: KindUnit) -> None:
    assert missing_parts(unit) == []


@pytest.mark.parametrize("unit", registry.units(), ids=lambda u: u.kind.value)
def test_the_registry_installs_each_kinds_evolve_handlers(unit: KindUnit) -> None:
    for event, handler in unit.events.items():
        assert EVENT_HANDLERS[event] is handler


_BODY = ev.Body
"""The ``Body`` union as it is (the fixture below widens it)."""
_SCHEMAS = codec.schema_dir()
"""The Avro schemas as they are (the fixture below copies them, and widens
``HistoryEvent``'s union)."""


class _Throwaway(StrEnum):
    THROWAWAY = "throwaway"


@dataclass(frozen=True)
class ThrowawayHappened:
    """A throw-away kind's one event."""

    workflow_id: str
    node: str
    at_ms: int


@pytest.fixture
def throwaway_known_to_every_reader(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``ThrowawayHappened`` has every reader's part outside its unit: a schema, a place in
    ``HistoryEvent``'s and ``Body``'s unions, a record type, a projection statement and
    an audit rule."""
    for schema in codec.schema_dir().glob("*.avsc"):
        shutil.copy(schema, tmp_path)
    (tmp_path / "ThrowawayHappened.avsc").write_text("{}")
    history_event = orjson.loads((tmp_path / "HistoryEvent.avsc").read_bytes())
    next(f for f in history_event["fields"] if f["name"] == "body")["type"].append(
        "headwater.ThrowawayHappened")
    (tmp_path / "HistoryEvent.avsc").write_bytes(orjson.dumps(history_event))
    monkeypatch.setenv("HEADWATER_SCHEMA_DIR", str(tmp_path))
    monkeypatch.setattr(ev, "Body", ev.Body | ThrowawayHappened)
    monkeypatch.setitem(codec.RECORD_TYPES, "ThrowawayHappened", ThrowawayHappened)
    monkeypatch.setattr(writer, "PROJECTED_EVENTS", writer.PROJECTED_EVENTS | {ThrowawayHappened})
    monkeypatch.setattr(expected_rows, "UNAUDITED", expected_rows.UNAUDITED | {ThrowawayHappened})


def _throwaway(**changes: Any) -> KindUnit:
    """A throw-away kind: the task kind's rules and fields, one event of its own."""
    task = registry.unit(NodeKind.TASK)
    fields: dict[str, Any] = {"kind": _Throwaway.THROWAWAY,
                              "events": {ThrowawayHappened: lambda state, body: None},
                              "describe": {ThrowawayHappened: lambda body: ""},
                              "follow": {ThrowawayHappened: None}}
    return dataclasses.replace(task, **{**fields, **changes})


@pytest.mark.usefixtures("throwaway_known_to_every_reader")
def test_a_throwaway_kind_with_every_part_lacks_nothing() -> None:
    assert missing_parts(_throwaway()) == []


@pytest.mark.usefixtures("throwaway_known_to_every_reader")
def test_a_kind_without_a_projection_statement_is_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer, "PROJECTED_EVENTS", writer.PROJECTED_EVENTS - {ThrowawayHappened})
    assert missing_parts(_throwaway()) == [
        "kind throwaway: ThrowawayHappened has no projection statement (services/projector, "
        "writer.PROJECTED_EVENTS)"]


@pytest.mark.usefixtures("throwaway_known_to_every_reader")
def test_a_kind_without_an_evolve_handler_is_named() -> None:
    assert missing_parts(_throwaway(events={ThrowawayHappened: None})) == [
        "kind throwaway: ThrowawayHappened has no evolve handler"]


@pytest.mark.usefixtures("throwaway_known_to_every_reader")
def test_a_kind_without_a_start_rule_a_parser_or_a_schema_is_named(tmp_path: Path) -> None:
    (tmp_path / "ThrowawayHappened.avsc").unlink()
    assert missing_parts(_throwaway(start=None, parse=None)) == [
        "kind throwaway: no start rule", "kind throwaway: no spec parser",
        "kind throwaway: ThrowawayHappened has no Avro schema "
        "(schemas/avro/ThrowawayHappened.avsc)"]


@pytest.mark.usefixtures("throwaway_known_to_every_reader")
def test_a_kind_whose_event_is_in_no_union_and_reads_as_nothing_is_named(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ev, "Body", _BODY)
    shutil.copy(_SCHEMAS / "HistoryEvent.avsc", tmp_path)
    assert missing_parts(_throwaway(describe={}, follow={})) == [
        "kind throwaway: ThrowawayHappened has no timeline description (KindUnit.describe)",
        "kind throwaway: ThrowawayHappened has no live-view line (KindUnit.follow, None for none)",
        "kind throwaway: ThrowawayHappened has no place in the body union of "
        "schemas/avro/HistoryEvent.avsc",
        "kind throwaway: ThrowawayHappened has no place in the events.Body union "
        "(headwater/core/events/history.py)"]
