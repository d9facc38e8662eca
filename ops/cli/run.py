"""``headwater run NAME``: run a stored definition (``POST /v1/run/{name}``, through the
Python client's ``Client.run``) and print its output.

Without options it waits up to ``--timeout`` (the gateway's longest wait when not given)
and prints the output, or the status and error; ``--async`` prints the run's id at once;
``--follow`` shows its progress until it ends. Exit codes are ``submit --follow``'s: 0
succeeded, 1 failed, cancelled, not ended within the wait, or unknown definition (404),
2 any other refusal or an unreachable gateway.
"""

from __future__ import annotations

import json
import time
from typing import Annotated, Any

import typer
from rich.markup import escape

from ops.cli.common import GATEWAY, console, errors_console, styled
from ops.cli.workflows import client, gateway_errors, load_input, report


def run(
    name: Annotated[str, typer.Argument(help="the definition: NAME or NAME@VERSION")],
    input: Annotated[str | None, typer.Option("--input", "-i",
                     help="input as JSON, or @file.json")] = None,
    timeout: Annotated[float | None, typer.Option(
        min=0, help="how long the gateway waits for the run to end, seconds (default: "
                    "its longest wait)")] = None,
    async_: Annotated[bool, typer.Option(
        "--async", help="print the run's id at once, without waiting")] = False,
    follow_: Annotated[bool, typer.Option(
        "--follow", help="watch progress until the run ends")] = False,
    id: Annotated[str | None, typer.Option(
        help="the run's id (idempotency key; default: wf-<random>, chosen before the "
             "first try)")] = None,
    gateway: str = GATEWAY,
) -> None:
    """Run a stored definition by name and print its output.

    E.g. ``headwater run docs.index --input '{"module": "json"}' --timeout 30``.
    """
    from headwater.client.http import new_workflow_id

    if async_ and follow_:
        raise typer.BadParameter("--async and --follow exclude each other")
    run_input: Any = load_input(input)
    run_id = id or new_workflow_id()
    if id is None:
        errors_console.print(f"running {escape(name)} as {escape(run_id)} (the id is chosen "
                             f"before the first try: retrying with --id {escape(run_id)} "
                             "is safe)")
    started = time.monotonic()
    with gateway_errors(gateway, f"run {run_id}"), client(gateway) as hw:
        if follow_:
            from ops.cli.follow import follow

            stream = hw.run(name, run_input, mode="stream", timeout=timeout, id=run_id)
            state = follow(((e.type, e.id, e.data) for e in stream), console)
            report(state, time.monotonic() - started)
            return
        answer = hw.run(name, run_input, mode="async" if async_ else "sync",
                        timeout=timeout, id=run_id)
    console.print(f"run [bold]{escape(answer.id)}[/] {styled(answer.status)}")
    if async_:
        return
    if not answer.done:
        console.print(f"not ended within the wait: `headwater status {escape(answer.id)}`")
        raise typer.Exit(1)
    if answer.status == "succeeded":
        console.print_json(json.dumps(answer.output))
        return
    console.print(f"[red]{escape(str(answer.error))}[/]")
    raise typer.Exit(1)
