"""``headwater triggers``: create or replace, list, show and delete triggers (Kafka
topics whose records start runs), through the gateway's ``/v1/triggers``
(``headwater.client``); the commands' shape is ``ops.cli.resources.Registry``'s, shared
with ``headwater definitions`` and ``headwater schedules``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from ops.cli.common import GATEWAY, console, fail
from ops.cli.resources import JsonOpt, Registry, read_file, sub_app

if TYPE_CHECKING:
    from headwater.client.triggers import Trigger

triggers_app = sub_app("Triggers: Kafka topics whose records start runs.")
NameArg = Annotated[str, typer.Argument(help="the trigger's name")]


def _lag(t: Trigger) -> str:
    return "-" if t.lag is None else str(t.lag)


def _row(t: Trigger) -> tuple[str, ...]:
    return (escape(t.name), escape(t.tenant or "-"), escape(t.topic),
            escape(str(t.settings.get("format", "json"))), escape(t.definition), _lag(t))


TRIGGERS: Registry[Trigger] = Registry(
    "trigger", "triggers", lambda hw: hw.triggers,
    ("name", "tenant", "topic", "format", "definition", "lag"), _row)
"""The registry's commands (``Client.triggers``)."""


def read_trigger(path: Path, name: str | None) -> tuple[str, dict[str, Any]]:
    """The name and body in a YAML or JSON file: a mapping of the ``PUT`` body's fields
    (``topic``, ``definition``, ``format``, ``filter``, ``input``, ``id``, ``start``)
    and ``name`` (or ``name`` given).

    Raises:
        typer.Exit: the file cannot be read, is no mapping, or has no name (exit 2).
    """
    doc = read_file(path)
    if not isinstance(doc, dict):
        fail(f"{path} holds no mapping (topic, definition, input, ...)")
    target = name or doc.get("name")
    if not isinstance(target, str) or not target:
        fail(f"{path} has no name: add name: or give --name")
    return target, {k: v for k, v in doc.items() if k != "name"}


@TRIGGERS.apply_command(
    triggers_app, "YAML or JSON: name, topic, definition, format, filter, input, id, start",
    "the file's name:")
def apply(file: Path, name: str | None, gateway: str) -> None:
    """Create or replace the trigger in FILE.

    The same settings change nothing; others take effect on every gateway, going on from
    the offsets the trigger's consumer group committed."""
    target, body = read_trigger(file, name)
    TRIGGERS.tell(gateway, lambda hw: hw.triggers.apply(target, body),
                  lambda t: f"{escape(t.name)}: reads {escape(t.topic)}, starts runs of "
                            f"{escape(t.definition)}")


@triggers_app.command("list")
def list_triggers(as_json: JsonOpt = False, gateway: str = GATEWAY) -> None:
    """List the triggers, with the lag of each one's consumer group."""
    TRIGGERS.list(as_json, gateway)


@triggers_app.command()
def show(name: NameArg, as_json: JsonOpt = False, gateway: str = GATEWAY) -> None:
    """Show a trigger: its settings and its lag per partition."""
    TRIGGERS.show(gateway, lambda hw: hw.triggers.get(name), as_json, _describe)


def _describe(found: Trigger) -> None:
    settings = found.settings
    console.print(f"[bold]{escape(found.name)}[/] reads {escape(found.topic)} "
                  f"({escape(str(settings.get('format')))}, from the "
                  f"{escape(str(settings.get('start')))} record) and starts runs of "
                  f"{escape(found.definition)}")
    for field in ("filter", "input", "id"):
        console.print(f"{field}: {escape(json.dumps(settings.get(field)))}")
    lag = found.raw.get("lag")
    if not isinstance(lag, dict):
        console.print("lag: not known (Kafka could not be read)")
        return
    table = Table("partition", "end", "committed", "lag", box=None)
    for row in lag.get("partitions") or []:
        table.add_row(str(row["partition"]), str(row["end"]),
                      "-" if row["committed"] is None else str(row["committed"]),
                      str(row["lag"]))
    console.print(f"consumer group {escape(lag.get('group', ''))}, lag {lag.get('lag')}")
    console.print(table if lag.get("partitions") else "its topic does not exist yet")


@triggers_app.command()
def delete(name: NameArg, gateway: str = GATEWAY) -> None:
    """Delete a trigger: its consumers stop; runs already started go on."""
    TRIGGERS.delete(name, gateway)
