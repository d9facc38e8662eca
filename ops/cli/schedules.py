"""``headwater schedules``: create or replace, list, show, pause, resume and delete
schedules, through the gateway's ``/v1/schedules`` (``headwater.client``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.markup import escape
from rich.table import Table

from ops.cli.common import GATEWAY, console, fail, styled
from ops.cli.workflows import client, gateway_errors

schedules_app = typer.Typer(help="Schedules: runs of a definition at cron times.",
                            no_args_is_help=True, add_completion=False)
NameArg = Annotated[str, typer.Argument(help="the schedule's name")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print the raw JSON")]


def read_schedule(path: Path, name: str | None) -> tuple[str, dict[str, Any]]:
    """The name and body in a YAML or JSON file: a mapping of the ``PUT`` body's fields
    (``cron``, ``definition``, ``input``, ``timezone`` ...) and ``name`` (or ``name``
    given).

    Raises:
        typer.Exit: the file cannot be read, is no mapping, or has no name (exit 2).
    """
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        fail(f"cannot read {path}: {e}")
    if not isinstance(doc, dict):
        fail(f"{path} holds no mapping (cron, definition, input, ...)")
    body = {k: v for k, v in doc.items() if k != "name"}
    target = name or doc.get("name")
    if not isinstance(target, str) or not target:
        fail(f"{path} has no name: add name: or give --name")
    if hasattr(body.get("start_at"), "isoformat"):  # YAML reads a bare time as a datetime
        body["start_at"] = body["start_at"].isoformat()
    return target, body


@schedules_app.command()
def apply(
    file: Annotated[Path, typer.Argument(help="YAML or JSON: name, cron, definition, "
                                              "input, timezone, overlap, catchup ...")],
    name: Annotated[str | None, typer.Option(help="the schedule's name (default: the "
                                                  "file's name:)")] = None,
    gateway: str = GATEWAY,
) -> None:
    """Create or replace the schedule in FILE.

    The same settings as the live one change nothing; others start the next generation
    (the one before is cancelled; its runs go on)."""
    target, body = read_schedule(file, name)
    with gateway_errors(gateway), client(gateway) as hw:
        applied = hw.schedules.apply(target, body)
    change = "created generation" if applied.created else "unchanged, generation"
    console.print(f"{escape(applied.name)}: {change} {applied.generation} "
                  f"({escape(applied.workflow_id)})")


def _definition(doc: dict[str, Any]) -> str:
    ref = doc.get("definition") or {}
    return f"{ref.get('name')}@{ref.get('version')}" if isinstance(ref, dict) else str(ref)


@schedules_app.command("list")
def list_schedules(as_json: JsonOpt = False, gateway: str = GATEWAY) -> None:
    """List the live schedules, by name."""
    with gateway_errors(gateway), client(gateway) as hw:
        found = hw.schedules.list()
    if as_json:
        typer.echo(json.dumps([s.raw for s in found], indent=2))
        return
    table = Table("name", "gen", "cron", "definition", "state", "next fire", box=None)
    for s in found:
        table.add_row(escape(s.name), str(s.generation), escape(s.cron),
                      escape(_definition(s.raw)), "paused" if s.paused else "active",
                      escape(s.next_fire_at or "-"))
    console.print(table if found else "no schedules")


@schedules_app.command()
def show(name: NameArg, as_json: JsonOpt = False, gateway: str = GATEWAY) -> None:
    """Show a schedule: its settings, state and recent runs."""
    with gateway_errors(gateway), client(gateway) as hw:
        found = hw.schedules.get(name)
    doc = found.raw
    if as_json:
        typer.echo(json.dumps(doc, indent=2))
        return
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
    with gateway_errors(gateway), client(gateway) as hw:
        hw.schedules.pause(name)
    console.print(f"{escape(name)}: pause sent")


@schedules_app.command()
def resume(name: NameArg, gateway: str = GATEWAY) -> None:
    """Resume a paused schedule from its next fire time after now."""
    with gateway_errors(gateway), client(gateway) as hw:
        hw.schedules.resume(name)
    console.print(f"{escape(name)}: resume sent")


@schedules_app.command()
def delete(name: NameArg, gateway: str = GATEWAY) -> None:
    """Delete a schedule: no new runs; runs already started go on."""
    with gateway_errors(gateway), client(gateway) as hw:
        hw.schedules.delete(name)
    console.print(f"{escape(name)} deleted: no new runs")
