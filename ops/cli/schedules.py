"""``headwater schedules``: create or replace, list, show, pause, resume and delete
schedules, through the gateway's ``/v1/schedules`` (``headwater.client``); the commands'
shape is ``ops.cli.resources.Registry``'s, shared with ``headwater definitions``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from ops.cli.common import GATEWAY, console, fail, styled
from ops.cli.resources import JsonOpt, Registry, read_file, sub_app

if TYPE_CHECKING:
    from headwater.client.types import Schedule, ScheduleApplied

schedules_app = sub_app("Schedules: runs of a definition at cron times.")
NameArg = Annotated[str, typer.Argument(help="the schedule's name")]


def _definition(doc: dict[str, Any]) -> str:
    ref = doc.get("definition") or {}
    return f"{ref.get('name')}@{ref.get('version')}" if isinstance(ref, dict) else str(ref)


def _row(s: Schedule) -> tuple[str, ...]:
    return (escape(s.name), str(s.generation), escape(s.cron), escape(_definition(s.raw)),
            "paused" if s.paused else "active", escape(s.next_fire_at or "-"))


SCHEDULES: Registry[Schedule] = Registry(
    "schedule", "schedules", lambda hw: hw.schedules,
    ("name", "gen", "cron", "definition", "state", "next fire"), _row)
"""The registry's commands (``Client.schedules``)."""


def read_schedule(path: Path, name: str | None) -> tuple[str, dict[str, Any]]:
    """The name and body in a YAML or JSON file: a mapping of the ``PUT`` body's fields
    (``cron``, ``definition``, ``input``, ``timezone`` ...) and ``name`` (or ``name``
    given).

    Raises:
        typer.Exit: the file cannot be read, is no mapping, or has no name (exit 2).
    """
    doc = read_file(path)
    if not isinstance(doc, dict):
        fail(f"{path} holds no mapping (cron, definition, input, ...)")
    body = {k: v for k, v in doc.items() if k != "name"}
    target = name or doc.get("name")
    if not isinstance(target, str) or not target:
        fail(f"{path} has no name: add name: or give --name")
    if hasattr(body.get("start_at"), "isoformat"):  # YAML reads a bare time as a datetime
        body["start_at"] = body["start_at"].isoformat()
    return target, body


@SCHEDULES.apply_command(
    schedules_app, "YAML or JSON: name, cron, definition, input, timezone, overlap, "
    "catchup ...", "the file's name:")
def apply(file: Path, name: str | None, gateway: str) -> None:
    """Create or replace the schedule in FILE.

    The same settings as the live one change nothing; others start the next generation
    (the one before is cancelled; its runs go on)."""
    target, body = read_schedule(file, name)
    SCHEDULES.tell(gateway, lambda hw: hw.schedules.apply(target, body), _applied)


def _applied(applied: ScheduleApplied) -> str:
    change = "created generation" if applied.created else "unchanged, generation"
    return (f"{escape(applied.name)}: {change} {applied.generation} "
            f"({escape(applied.workflow_id)})")


@schedules_app.command("list")
def list_schedules(as_json: JsonOpt = False, gateway: str = GATEWAY) -> None:
    """List the live schedules, by name."""
    SCHEDULES.list(as_json, gateway)


@schedules_app.command()
def show(name: NameArg, as_json: JsonOpt = False, gateway: str = GATEWAY) -> None:
    """Show a schedule: its settings, state and recent runs."""
    SCHEDULES.show(gateway, lambda hw: hw.schedules.get(name), as_json, _describe)


def _describe(found: Schedule) -> None:
    doc = found.raw
    state = "paused" if found.paused else "active"
    console.print(f"[bold]{escape(found.name)}[/] generation {found.generation} "
                  f"({escape(found.workflow_id)}), {state}, {styled(doc.get('status', ''))}")
    console.print(f"cron {escape(found.cron)} in {escape(found.timezone)}, runs "
                  f"{escape(_definition(doc))}; overlap {doc.get('overlap')}, catchup "
                  f"{doc.get('catchup')} (max {doc.get('catchup_max')}), misfire grace "
                  f"{doc.get('misfire_grace')} s")
    console.print(f"next fire {escape(found.next_fire_at or '-')}, last fire "
                  f"{escape(found.last_fire_at or '-')}, last run "
                  f"{escape(found.last_run_id or '-')}; fired {found.fired}, skipped "
                  f"{found.skipped}")
    runs = doc.get("runs") or []
    table = Table("run", "status", "created", box=None)
    for run in runs:
        table.add_row(escape(run["workflow_id"]), styled(run["status"]),
                      escape(run.get("created_at") or ""))
    console.print(table if runs else "no runs yet")


@schedules_app.command()
def pause(name: NameArg, gateway: str = GATEWAY) -> None:
    """Pause a schedule: its fire times start no run until resumed."""
    SCHEDULES.tell(gateway, lambda hw: hw.schedules.pause(name),
                   lambda _: f"{escape(name)}: pause sent")


@schedules_app.command()
def resume(name: NameArg, gateway: str = GATEWAY) -> None:
    """Resume a paused schedule from its next fire time after now."""
    SCHEDULES.tell(gateway, lambda hw: hw.schedules.resume(name),
                   lambda _: f"{escape(name)}: resume sent")


@schedules_app.command()
def delete(name: NameArg, gateway: str = GATEWAY) -> None:
    """Delete a schedule: no new runs; runs already started go on."""
    SCHEDULES.delete(name, gateway)
