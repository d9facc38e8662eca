"""``headwater run NAME``: run a stored definition (``POST /v1/run/{name}``, through the
Python client's ``Client.run``) and print its output.

Without options it waits up to ``--timeout`` (the gateway's longest wait when not given)
and prints the output, or the status and error; ``--async`` prints the run's id at once;
``--follow`` shows its progress until it ends. Exit codes are ``submit --follow``'s: 0
succeeded, 1 failed, cancelled, not ended within the wait, or unknown definition (404),
2 any other refusal or an unreachable gateway.

The run's id is chosen before the first try (the client retries a lost connection or a
503 with it), and said only where the run may have started unseen: an unreachable
gateway, a 5xx, or Ctrl-C while waiting; then retrying with ``--id`` is safe. A refusal
(an unknown definition: what the gateway suggests instead) started nothing, and says
so without it.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Annotated, Any

import typer
from rich.markup import escape

from headwater import errors
from ops.cli.common import GATEWAY, console, errors_console, fail, styled
from ops.cli.labels import RunLabels, label_options
from ops.cli.workflows import (
    PRIORITY_HELP,
    client,
    gateway_errors,
    load_input,
    priority_option,
    report,
)


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
    priority: Annotated[str | None, typer.Option(
        "--priority", "-p", help=f"{PRIORITY_HELP}; default: the definition's (5 "
                                 "without one)")] = None,
    refresh_cache: Annotated[bool, typer.Option(
        "--refresh-cache", help="bypass cache hits: its cached nodes compute and store "
                                "fresh outputs")] = False,
    label: RunLabels = None,
    gateway: str = GATEWAY,
) -> None:
    """Run a stored definition by name and print its output.

    E.g. ``headwater run docs.index --input '{"module": "json"}' --timeout 30``, or
    ``headwater run docs.index --priority high`` ahead of the runs waiting at a lower
    one.
    """
    from headwater.client.http import new_workflow_id

    if async_ and follow_:
        raise typer.BadParameter("--async and --follow exclude each other")
    run_input: Any = load_input(input)
    options = run_options(priority, refresh_cache, label)
    run_id = id or new_workflow_id()
    started = time.monotonic()
    with gateway_errors(gateway, f"run {run_id}"), client(gateway) as hw, \
            maybe_started(name, run_id, id is None), unknown_definition(name):
        if follow_:
            from ops.cli.follow import follow

            stream = hw.run(name, run_input, mode="stream", timeout=timeout, id=run_id,
                            **options)
            state = follow(((e.type, e.id, e.data) for e in stream), console)
            report(state, time.monotonic() - started)
            return
        answer = hw.run(name, run_input, mode="async" if async_ else "sync",
                        timeout=timeout, id=run_id, **options)
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


def run_options(priority: str | None, refresh_cache: bool,
                label: list[str] | None) -> dict[str, Any]:
    """The client's ``RunOptions`` of ``--priority``, ``--refresh-cache`` and ``--label``.

    Raises:
        typer.BadParameter: a priority or a label it may not have.
    """
    return {"priority": priority_option(priority), "cache_refresh": refresh_cache,
            "labels": label_options(label or [], any_value=False) or None}


@contextlib.contextmanager
def maybe_started(name: str, run_id: str, chosen: bool) -> Iterator[None]:
    """On an error after which the run may have started unseen (an unreachable gateway, a
    5xx, Ctrl-C), say its id (when the command chose it) and that retrying with it is
    safe; the error goes on as it was."""
    try:
        yield
    except (errors.GatewayUnreachable, errors.HeadwaterHTTPError, KeyboardInterrupt) as e:
        if chosen and (not isinstance(e, errors.HeadwaterHTTPError) or e.status >= 500):
            errors_console.print(
                f"the run of {escape(name)} may have started as {escape(run_id)}: retrying "
                f"with --id {escape(run_id)} is safe (`headwater status {escape(run_id)}` "
                "shows it)")
        raise


@contextlib.contextmanager
def unknown_definition(name: str) -> Iterator[None]:
    """End the command on a 404: no such definition (the gateway's detail names the
    closest ones it knows), nothing started (exit 1).

    Raises:
        typer.Exit: on ``errors.NotFound``.
    """
    try:
        yield
    except errors.NotFound as e:
        fail(f"{e.detail or f'no definition {name}'}; nothing was started "
             "(`headwater definitions list` lists the registered ones)", 1)
