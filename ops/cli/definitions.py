"""``headwater definitions``: register, list, show and delete workflow definitions, through
the gateway's ``/v1/definitions`` (``headwater.client``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.markup import escape
from rich.table import Table

from ops.cli.common import GATEWAY, console, fail
from ops.cli.workflows import client, gateway_errors

definitions_app = typer.Typer(help="Stored workflow definitions and their versions.",
                              no_args_is_help=True, add_completion=False)


def read_definition(path: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The spec and input schema in a YAML or JSON file: a bare spec, or a mapping with
    ``workflow`` (the spec) and ``input_schema``.

    Raises:
        typer.Exit: the file cannot be read or holds neither (exit 2).
    """
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        fail(f"cannot read {path}: {e}")
    if isinstance(doc, dict) and isinstance(doc.get("workflow"), dict):
        schema = doc.get("input_schema")
        if schema is not None and not isinstance(schema, dict):
            fail(f"{path}: input_schema must be a mapping (a JSON Schema), or absent")
        return doc["workflow"], schema
    if isinstance(doc, dict) and "nodes" in doc:
        return doc, None
    fail(f"{path} holds neither a spec (name, nodes) nor a mapping with 'workflow'")


@definitions_app.command()
def apply(
    file: Annotated[Path, typer.Argument(help="YAML or JSON: a spec, or {workflow, "
                                              "input_schema}")],
    name: Annotated[str | None, typer.Option(help="the definition's name (default: the "
                                                  "spec's name)")] = None,
    gateway: str = GATEWAY,
) -> None:
    """Register FILE as a version of a definition.

    A new version when it differs from the latest; else the latest again, unchanged."""
    spec, schema = read_definition(file)
    target = name or spec.get("name")
    if not isinstance(target, str) or not target:
        fail("the spec has no name: give --name")
    with gateway_errors(gateway), client(gateway) as hw:
        stored = hw.definitions.put(target, spec, input_schema=schema)
    console.print(f"{escape(stored.name)} version {stored.version} "
                  f"(digest {stored.digest[:12]})")


@definitions_app.command("list")
def list_definitions(
    as_json: Annotated[bool, typer.Option("--json", help="print the raw JSON")] = False,
    gateway: str = GATEWAY,
) -> None:
    """List each definition's latest version (deleted ones aside), by name."""
    with gateway_errors(gateway), client(gateway) as hw:
        found = hw.definitions.list()
    if as_json:
        typer.echo(json.dumps([d.raw for d in found], indent=2))
        return
    table = Table("name", "version", "created", "digest", box=None)
    for d in found:
        table.add_row(escape(d.name), str(d.version), escape(d.created_at or ""),
                      d.digest[:12])
    console.print(table if found else "no definitions")


@definitions_app.command()
def show(
    name: Annotated[str, typer.Argument(help="the definition's name")],
    version: Annotated[int | None, typer.Option(help="a version (default: the latest)",
                                                min=1)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the raw JSON")] = False,
    gateway: str = GATEWAY,
) -> None:
    """Show a definition's version: its spec and input schema.

    A deleted definition's versions only with --version."""
    with gateway_errors(gateway), client(gateway) as hw:
        found = hw.definitions.get(name, version)
    if as_json:
        typer.echo(json.dumps(found.raw, indent=2))
        return
    doc = found.raw
    state = "deleted" if doc.get("deleted") else "live"
    console.print(f"[bold]{escape(found.name)}[/] version {found.version} of "
                  f"{doc.get('latest', found.version)} ({state}), created "
                  f"{escape(found.created_at or '?')}, digest {found.digest[:12]}")
    typer.echo(yaml.safe_dump({"workflow": doc.get("workflow"),
                               "input_schema": doc.get("input_schema")}, sort_keys=False))


@definitions_app.command()
def delete(
    name: Annotated[str, typer.Argument(help="the definition's name")],
    gateway: str = GATEWAY,
) -> None:
    """Delete a definition: no new runs of it, running ones go on.

    New runs get 410; its versions stay readable (show --version)."""
    with gateway_errors(gateway), client(gateway) as hw:
        hw.definitions.delete(name)
    console.print(f"{escape(name)} deleted: no new runs")
