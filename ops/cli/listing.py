"""``headwater list``: runs newest first (``GET /v1/workflows``), filtered by status,
name, definition and labels, as a table (``--json``: the items as the gateway gives them)."""

from __future__ import annotations

import json
import shlex
from datetime import datetime
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from ops.cli.common import GATEWAY, console, print_table, styled
from ops.cli.labels import label_options, labels_text
from ops.cli.workflows import client, gateway_errors

STATUSES = ("accepted", "running", "succeeded", "failed", "cancelled")


def when(rfc3339: str | None) -> str:
    """An RFC 3339 time as ``YYYY-MM-DD HH:MM:SS`` in its own offset (``-`` when None;
    the text itself when it does not parse)."""
    if not rfc3339:
        return "-"
    try:
        return datetime.fromisoformat(rfc3339).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return rfc3339


def definition_of(raw: dict[str, Any]) -> str:
    """``name@version`` of the definition a list item was started from, or ``""``."""
    ref = raw.get("definition")
    if isinstance(ref, dict) and ref.get("name"):
        return f"{ref['name']}@{ref.get('version')}" if ref.get("version") else ref["name"]
    return str(ref) if isinstance(ref, str) else ""


def status_text(raw: dict[str, Any]) -> str:
    """A list item's status, styled, with ``(paused)`` after it while the run is paused."""
    shown = styled(str(raw.get("status") or ""))
    return f"{shown} [yellow](paused)[/]" if raw.get("paused") else shown


def list_runs(
    status: Annotated[str | None, typer.Option(
        help=f"only runs in this status ({', '.join(STATUSES)})")] = None,
    name: Annotated[str | None, typer.Option(help="only runs of this spec name")] = None,
    definition: Annotated[str | None, typer.Option(
        help="only runs started from this definition (its name)")] = None,
    label: Annotated[list[str] | None, typer.Option(
        "--label", "-l", help="KEY=VALUE (or KEY: any value): only runs carrying it; "
                              "repeat for all of several")] = None,
    paused: Annotated[bool | None, typer.Option(
        "--paused/--not-paused", help="only the runs paused now (or only the others)",
        show_default=False)] = None,
    limit: Annotated[int, typer.Option(min=1, max=500, help="how many, newest first")] = 20,
    cursor: Annotated[str | None, typer.Option(
        help="the next page's cursor, as a previous list printed it")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the items as JSON")] = False,
    gateway: str = GATEWAY,
) -> None:
    """List runs, newest first, filtered.

    E.g. ``headwater list --status failed --limit 5``, ``headwater list --label
    team=search --label env=prod``, ``headwater list --paused``.
    """
    labels = label_options(label or [], any_value=True)
    if status is not None and status not in STATUSES:
        raise typer.BadParameter(f"--status {status!r}: one of {', '.join(STATUSES)}")
    with gateway_errors(gateway), client(gateway) as hw:
        page = hw.list(status=status, name=name, definition=definition, limit=limit,
                       cursor=cursor, labels=labels or None, paused=paused)
    if as_json:
        console.print_json(json.dumps({"items": [w.raw for w in page.items],
                                       "next_cursor": page.next_cursor}))
        return
    tenants = any(w.tenant for w in page.items)  # a column only where there are tenants
    labelled = any(w.labels for w in page.items)  # a column only where there are labels
    table = Table("id", *(["tenant"] if tenants else []), "name", "definition", "status",
                  *(["labels"] if labelled else []), "created", "updated", "error")
    for w in page.items:
        shown = labels_text(w.labels)
        table.add_row(escape(w.id), *([escape(w.tenant or "")] if tenants else []),
                      escape(w.name), escape(definition_of(w.raw)), status_text(w.raw),
                      *([escape(shown)] if labelled else []),
                      when(w.created_at), when(w.updated_at), escape((w.error or "")[:50]))
    print_table(table, whole=("id",))
    if not page.items:
        console.print("no runs" + (" match" if status or name or definition or labels
                                   or paused is not None else ""))
    if page.next_cursor:
        again = [f"--{k} {shlex.quote(str(v))}" for k, v in (("status", status), ("name", name),
                                           ("definition", definition), ("limit", limit))
                 if v is not None and (k != "limit" or v != 20)]
        again += [f"--label {shlex.quote(p)}" for p in label or []]
        again += [] if paused is None else ["--paused" if paused else "--not-paused"]
        console.print(escape(" ".join(["more: headwater list", *again,
                                       f"--cursor {page.next_cursor}"])))
