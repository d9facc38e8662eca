"""``headwater task RUN NODE [INDEX] [--json] [--traceback/--no-traceback]``: one task of a
run, from ``GET /v1/workflows/{id}/tasks/{node}/{index}``: its task and queue, the input
its latest attempt was given, its output, and every attempt (worker, times, error) with
the traceback of each that failed; an attempt a cache's hit succeeded names the run
and attempt that computed its output. A value held by reference is printed as its
reference (with its ``href``)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ops.cli.common import GATEWAY, console, print_table
from ops.cli.workflows import client, gateway_errors


def task(
    workflow_id: Annotated[str, typer.Argument(help="the run")],
    node: Annotated[str, typer.Argument(help="the node")],
    index: Annotated[int | None, typer.Argument(
        help="a map item's index (a loop's task index); none for a node without")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the raw JSON")] = False,
    traceback_: Annotated[bool, typer.Option(
        "--traceback/--no-traceback", help="print each failed attempt's traceback")] = True,
    gateway: str = GATEWAY,
) -> None:
    """Show one task of a run: its input, output and every attempt."""
    with gateway_errors(gateway), client(gateway) as hw:
        found = hw.task(workflow_id, node, index)
    if as_json:
        console.print_json(json.dumps(found.raw))
        return
    where = node if index is None else f"{node}[{index}]"
    console.print(f"[bold]{escape(where)}[/] of {escape(workflow_id)}: task "
                  f"{escape(found.task)} on queue {escape(found.queue)}, {found.status}")
    console.print(f"input: {json.dumps(found.input)}", markup=False, highlight=False,
                  soft_wrap=True)
    if found.output is not None:
        console.print(f"output: {json.dumps(found.output)}", markup=False, highlight=False,
                      soft_wrap=True)
    table = Table("attempt", "status", "worker", "started", "finished", "error")
    for a in found.attempts:
        error = f"{a.error_type}: {a.error}" if a.error_type else a.error
        table.add_row(str(a.attempt), a.status, escape(a.worker), a.started_at or "",
                      a.finished_at or "", escape(error))
    print_table(table, whole=("worker",))
    for a in found.attempts:
        source = a.cached
        if source is not None:
            at = source.get("node") if source.get("index") is None else (
                f"{source.get('node')}[{source.get('index')}]")
            console.print(f"attempt {a.attempt} was not run: its output is the cache's, "
                          f"computed by {source.get('workflow_id')} {at} attempt "
                          f"{source.get('attempt')} (its logs are that run's)",
                          markup=False, highlight=False, soft_wrap=True)
    for a in found.attempts:
        if a.traceback and traceback_:
            console.print(f"attempt {a.attempt}:", style="bold")
            console.print(a.traceback.rstrip("\n"), markup=False, highlight=False,
                          soft_wrap=True)
