"""The node-kind registry is complete: every registered kind has every part it needs.

A kind is one unit (``headwater/core/kinds/``); what it declares there (spec parser,
machine rules, history events with their ``evolve`` handlers) is checked on the unit, and what the
readers of its events need is checked in each reader's table: an Avro schema, a codec
record type, a timeline description, a projection statement, the audit's expected rows
and the live view's line. ``missing_parts`` names each missing part with its kind; the
last tests build a throw-away kind that lacks one part and see exactly that part named.
"""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest

from headwater import codec
from headwater.core import registry
from headwater.core.evolve import EVENT_HANDLERS
from headwater.core.registry import KindUnit
from headwater.core.spec import NodeKind
from headwater.core.spec.kinds import KIND_PARSERS
from ops import expected_rows, history
from ops.cli import follow
from services.projector import writer


def missing_parts(unit: KindUnit) -> list[str]:
    """Every part ``unit`` lacks, each as ``"kind <kind>: <what is missing>"``."""
    where = f"kind {unit.kind.value}"
    missing = [f"{where}: no {rule} rule" for rule in ("start", "attempt_succeeded",
                                                       "attempt_failed")
               if not callable(getattr(unit, rule))]
    if not callable(unit.parse):
        missing.append(f"{where}: no spec parser")
    elif KIND_PARSERS.get(unit.kind, unit.parse) is not unit.parse:
        missing.append(f"{where}: spec.kinds.KIND_PARSERS holds another parser")
    if unit.timer_prefix is not None and not callable(unit.timer_fired):
        missing.append(f"{where}: timer {unit.timer_prefix}: no timer_fired rule")
    for event, handler in unit.events.items():
        missing += [f"{where}: {event.__name__} has no {part}"
                    for part, present in _event_parts(event, handler) if not present]
    return missing


def _event_parts(event: type[Any], handler: Any) -> list[tuple[str, bool]]:
    """``(part, present)`` for each part a node kind's history event needs."""
    name = event.__name__
    return [
        ("evolve handler", callable(handler)),
        (f"Avro schema (schemas/avro/{name}.avsc)", (codec.schema_dir() / f"{name}.avsc")
         .is_file()),
        ("codec record type (headwater/codec.py RECORD_TYPES)",
         codec.RECORD_TYPES.get(name) is event),
        ("timeline description (ops/history.py DESCRIPTIONS)", event in history.DESCRIPTIONS),
        ("projection statement (services/projector, writer.PROJECTED_EVENTS)",
         event in writer.PROJECTED_EVENTS),
        ("expected audit rows (ops/expected_rows.py KIND_RULES, NODE_ROWS or UNAUDITED)",
         event in expected_rows.KIND_RULES or event in expected_rows.NODE_ROWS
         or event in expected_rows.UNAUDITED),
        ("follow line (ops/cli/follow.py KIND_NOTES or QUIET)",
         name in follow.KIND_NOTES or name in follow.QUIET),
    ]


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


class _Throwaway(StrEnum):
    NOOP = "noop"


@dataclass(frozen=True)
class NoopHappened:
    """A throw-away kind's one event."""

    workflow_id: str
    node: str
    at_ms: int


@pytest.fixture
def noop_known_to_every_reader(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``NoopHappened`` has every reader's part: a schema, a record type, a timeline
    description, a projection statement, an audit rule and a follow line."""
    for schema in codec.schema_dir().glob("*.avsc"):
        shutil.copy(schema, tmp_path)
    (tmp_path / "NoopHappened.avsc").write_text("{}")
    monkeypatch.setenv("HEADWATER_SCHEMA_DIR", str(tmp_path))
    monkeypatch.setitem(codec.RECORD_TYPES, "NoopHappened", NoopHappened)
    monkeypatch.setitem(history.DESCRIPTIONS, NoopHappened, lambda b: "")
    monkeypatch.setattr(writer, "PROJECTED_EVENTS", writer.PROJECTED_EVENTS | {NoopHappened})
    monkeypatch.setattr(expected_rows, "UNAUDITED", expected_rows.UNAUDITED | {NoopHappened})
    monkeypatch.setattr(follow, "QUIET", follow.QUIET | {"NoopHappened"})


def _noop(**changes: Any) -> KindUnit:
    """A throw-away kind: the task kind's rules, one event of its own."""
    task = registry.unit(NodeKind.TASK)
    fields: dict[str, Any] = {"kind": _Throwaway.NOOP,
                              "events": {NoopHappened: lambda state, body: None}}
    return dataclasses.replace(task, **{**fields, **changes})


@pytest.mark.usefixtures("noop_known_to_every_reader")
def test_a_throwaway_kind_with_every_part_lacks_nothing() -> None:
    assert missing_parts(_noop()) == []


@pytest.mark.usefixtures("noop_known_to_every_reader")
def test_a_kind_without_a_projection_statement_is_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer, "PROJECTED_EVENTS", writer.PROJECTED_EVENTS - {NoopHappened})
    assert missing_parts(_noop()) == [
        "kind noop: NoopHappened has no projection statement (services/projector, "
        "writer.PROJECTED_EVENTS)"]


@pytest.mark.usefixtures("noop_known_to_every_reader")
def test_a_kind_without_an_evolve_handler_is_named() -> None:
    assert missing_parts(_noop(events={NoopHappened: None})) == [
        "kind noop: NoopHappened has no evolve handler"]


@pytest.mark.usefixtures("noop_known_to_every_reader")
def test_a_kind_without_a_start_rule_a_parser_or_a_schema_is_named(tmp_path: Path) -> None:
    (tmp_path / "NoopHappened.avsc").unlink()
    assert missing_parts(_noop(start=None, parse=None)) == [
        "kind noop: no start rule", "kind noop: no spec parser",
        "kind noop: NoopHappened has no Avro schema (schemas/avro/NoopHappened.avsc)"]
