"""``headwater rerun ID [--from NODE] [--input JSON|@file] [--id NEW] [--refresh-cache]
[--follow]``: run
an ended run again under a new id, reusing what succeeded (``POST /v1/workflows/{id}/
rerun``, or ``/reset`` with ``--from``), and print the new run's id (and, with
``--follow``, its progress and output)."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer
from rich.markup import escape

from ops.cli.common import GATEWAY, console, errors_console
from ops.cli.workflows import client, gateway_errors, load_input, report


def rerun(
    workflow_id: Annotated[str, typer.Argument(help="the ended run to run again")],
    from_: Annotated[str | None, typer.Option(
        "--from", help="reset to this node: it and everything downstream of it run "
                       "again (any ended run); for a code workflow main:STEP runs its "
                       "function again reusing the steps before STEP; without it, what "
                       "failed or was cancelled runs again")] = None,
    input: Annotated[str | None, typer.Option(
        "--input", "-i", help="the new run's input as JSON, or @file.json (default: the "
                              "source's)")] = None,
    id: Annotated[str | None, typer.Option(
        help="the new run's id (default: wf-<random>, chosen and printed before the "
             "first try)")] = None,
    refresh_cache: Annotated[bool, typer.Option(
        "--refresh-cache", help="its cached nodes compute afresh instead of taking the "
                                "cache's entries (a reset to a cached node wants it)")] = False,
    follow_: Annotated[bool, typer.Option("--follow/--no-follow",
                       help="watch the new run until it ends")] = False,
    gateway: str = GATEWAY,
) -> None:
    """Run an ended run again under a new id, reusing the outputs of what succeeded."""
    from headwater.client.http import new_workflow_id
    from headwater.client.requests import SAME_INPUT

    new_input: Any = SAME_INPUT if input is None else load_input(input)
    new_id = id or new_workflow_id()
    started = time.monotonic()
    with gateway_errors(gateway), client(gateway) as hw:
        with gateway_errors(gateway, f"a rerun of {workflow_id}"):  # a 4xx: refused
            answer = hw.rerun(workflow_id, input=new_input, id=new_id, from_node=from_,
                              cache_refresh=refresh_cache)
        what = f"from {escape(from_)}" if from_ else "from what failed"
        console.print(f"workflow [bold]{escape(answer.id)}[/] {answer.status}: a rerun of "
                      f"{escape(workflow_id)} {what}"
                      + ("" if answer.created else " (submitted before)"))
        if id is None:
            errors_console.print(f"(retrying with --id {escape(new_id)} is safe)")
        if not follow_:
            return
        from ops.cli.follow import follow

        state = follow(((e.type, e.id, e.data) for e in hw.events(answer.id)), console)
    report(state, time.monotonic() - started)
