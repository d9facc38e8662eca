"""``headwater definitions``: register, list, show and delete workflow definitions, through
the gateway's ``/v1/definitions`` (``headwater.client``); the commands' shape is
``ops.cli.resources.Registry``'s, shared with ``headwater schedules``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import yaml
from rich.markup import escape

from ops.cli.common import GATEWAY, console, fail
from ops.cli.resources import JsonOpt, Registry, read_file, sub_app

if TYPE_CHECKING:
    from headwater.client.types import Definition

definitions_app = sub_app("Stored workflow definitions and their versions.")
NameArg = Annotated[str, typer.Argument(help="the definition's name")]


def _row(d: Definition) -> tuple[str, ...]:
    return escape(d.name), str(d.version), escape(d.created_at or ""), d.digest[:12]


DEFINITIONS: Registry[Definition] = Registry(
    "definition", "definitions", lambda hw: hw.definitions,
    ("name", "version", "created", "digest"), _row)
"""The registry's commands (``Client.definitions``)."""


def read_definition(path: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The spec and input schema in a YAML or JSON file: a bare spec, or a mapping with
    ``workflow`` (the spec) and ``input_schema``.

    Raises:
        typer.Exit: the file cannot be read or holds neither (exit 2).
    """
    doc = read_file(path)
    if isinstance(doc, dict) and isinstance(doc.get("workflow"), dict):
        schema = doc.get("input_schema")
        if schema is not None and not isinstance(schema, dict):
            fail(f"{path}: input_schema must be a mapping (a JSON Schema), or absent")
        return doc["workflow"], schema
    if isinstance(doc, dict) and "nodes" in doc:
        return doc, None
    fail(f"{path} holds neither a spec (name, nodes) nor a mapping with 'workflow'")


@DEFINITIONS.apply_command(
    definitions_app, "YAML or JSON: a spec, or {workflow, input_schema}", "the spec's name")
def apply(file: Path, name: str | None, gateway: str) -> None:
    """Register FILE as a version of a definition.

    A new version when it differs from the latest; else the latest again, unchanged."""
    spec, schema = read_definition(file)
    target = name or spec.get("name")
    if not isinstance(target, str) or not target:
        fail("the spec has no name: give --name")
    DEFINITIONS.tell(gateway, lambda hw: hw.definitions.put(target, spec, input_schema=schema),
                     _stored)


def _stored(stored: Definition) -> str:
    return f"{escape(stored.name)} version {stored.version} (digest {stored.digest[:12]})"


@definitions_app.command("list")
def list_definitions(as_json: JsonOpt = False, gateway: str = GATEWAY) -> None:
    """List each definition's latest version (deleted ones aside), by name."""
    DEFINITIONS.list(as_json, gateway)


def _describe(found: Definition) -> None:
    doc = found.raw
    state = "deleted" if doc.get("deleted") else "live"
    console.print(f"[bold]{escape(found.name)}[/] version {found.version} of "
                  f"{doc.get('latest', found.version)} ({state}), created "
                  f"{escape(found.created_at or '?')}, digest {found.digest[:12]}")
    typer.echo(yaml.safe_dump({"workflow": doc.get("workflow"),
                               "input_schema": doc.get("input_schema")}, sort_keys=False))


@definitions_app.command()
def show(
    name: NameArg,
    version: Annotated[int | None, typer.Option(help="a version (default: the latest)",
                                                min=1)] = None,
    as_json: JsonOpt = False,
    gateway: str = GATEWAY,
) -> None:
    """Show a definition's version: its spec and input schema.

    A deleted definition's versions only with --version."""
    DEFINITIONS.show(gateway, lambda hw: hw.definitions.get(name, version), as_json,
                     _describe)


@definitions_app.command()
def delete(name: NameArg, gateway: str = GATEWAY) -> None:
    """Delete a definition: no new runs of it, running ones go on.

    New runs get 410; its versions stay readable (show --version)."""
    DEFINITIONS.delete(name, gateway)
