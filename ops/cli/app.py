"""The ``headwater`` command: run the local stack, submit, watch and signal workflows."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, NoReturn
from urllib.parse import quote

import httpx
import typer
import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from headwater.core.status import WorkflowStatus
from ops import localstack
from ops.cli.follow import STYLE, follow
from ops.cli.projection import projection_app
from ops.cli.replay import replay
from ops.cli.stuck import stuck

app = typer.Typer(help="Headwater: event-sourced workflows on Kafka.", no_args_is_help=True,
                  add_completion=False)
console = Console(soft_wrap=True, emoji=False)  # "retry:a:2" is no emoji code


def _default_gateway() -> str:
    port = os.environ.get("HEADWATER_GATEWAY_PORT", "8080")
    return f"http://127.0.0.1:{port}"


GATEWAY = typer.Option(_default_gateway(), envvar="HEADWATER_GATEWAY_URL",
                       help="gateway base URL (default: 127.0.0.1 on $HEADWATER_GATEWAY_PORT)")


def styled(status: str) -> str:
    """``status`` as console markup in its colour (plain when it has none, such as
    ``accepted``: an empty tag is a markup error)."""
    style = STYLE.get(status)
    return f"[{style}]{escape(status)}[/]" if style else escape(status)


def _fail(message: str, code: int = 2) -> NoReturn:
    console.print(f"[red]error:[/] {escape(message)}")
    raise typer.Exit(code)


@contextlib.contextmanager
def _gateway_errors(gateway: str) -> Iterator[None]:
    """Turn connection failures into one line naming the URL."""
    try:
        yield
    except httpx.TransportError as e:
        _fail(f"cannot reach the gateway at {gateway} ({e}); is the stack up "
              "(`headwater up`)? Set HEADWATER_GATEWAY_URL to use another one.")


def _problem(response: httpx.Response) -> NoReturn:
    try:
        doc = response.json()
        detail = doc.get("detail") or doc.get("title")
        errors = doc.get("errors") or []
    except ValueError:
        detail, errors = response.text, []
    lines = "".join(f"\n  - {e}" for e in errors if e != detail)
    _fail(f"{response.status_code} {detail}{lines}", 1 if response.status_code == 404 else 2)


@app.command()
def up(
    workers: Annotated[int, typer.Option(help="worker processes for the queue")] = 1,
    queue: Annotated[str, typer.Option(help="queue the workers serve")] = "cpu",
    tasks: Annotated[list[str] | None, typer.Option(help="task modules to import")] = None,
    gateway: str = GATEWAY,
) -> None:
    """Start Kafka, PostgreSQL, the coordinator, the gateway and workers (idempotent).

    Task modules are imported from the current directory (it is put on ``PYTHONPATH``).
    """
    localstack.infra("up")
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(),
                                                        os.environ.get("PYTHONPATH")]))}
    services = localstack.default_services(tasks or [localstack.EXAMPLE_TASKS], workers, queue)
    pids = {s.name: localstack.start(s, env) for s in services}
    console.print("waiting for the gateway to be ready ...")
    try:
        localstack.wait_ready(f"{gateway}/ready", pids=list(pids.values()))
        time.sleep(1.0)  # a worker that cannot import its tasks exits within a second
    except (TimeoutError, RuntimeError) as e:
        _fail(f"{e}. Logs: {localstack.home() / 'logs'}. If the gateway listens elsewhere, "
              "set HEADWATER_GATEWAY_PORT or HEADWATER_GATEWAY_URL.")
    dead = [s for s in services if not localstack.alive(pids[s.name])]
    for s in dead:
        s.pid_file.unlink(missing_ok=True)
        tail = s.log_file.read_text(errors="replace").strip().splitlines()[-3:]
        console.print(f"[red]{s.name} exited[/]: " + escape(" | ".join(tail)))
    ps()
    if dead:
        raise typer.Exit(1)


@app.command()
def restart(gateway: str = GATEWAY) -> None:
    """Restart every Headwater process as it was started (same queues, task modules and
    PYTHONPATH), e.g. to load changed task code, and start again those that stopped or
    crashed since (their pid file is left); Kafka, PostgreSQL and the data stay."""
    again: list[tuple[localstack.Service, dict[str, str]]] = []
    for name in localstack.stopped_services():
        launch = localstack.launched(name)
        if launch is None:
            console.print(f"[yellow]{name} had stopped; how it was started is not "
                          "recorded: start it again with `headwater up`[/]")
        else:
            console.print(f"{name} had stopped: starting it again")
            localstack.Service(name, ()).pid_file.unlink(missing_ok=True)
            again.append(launch)
    for name, _pid in localstack.running_services():
        launch = localstack.launched(name)
        localstack.stop(localstack.Service(name, ()))
        console.print(f"stopped {name}")
        if launch is None:
            console.print(f"[yellow]{name}: not restarted (how it was started is not "
                          "recorded); start it again with `headwater up`[/]")
        else:
            again.append(launch)
    pids = [localstack.start(service, env) for service, env in again]
    try:
        localstack.wait_ready(f"{gateway}/ready", pids=pids)
    except (TimeoutError, RuntimeError) as e:
        _fail(f"{e}. Logs: {localstack.home() / 'logs'}")
    ps()


@app.command()
def down() -> None:
    """Stop the Headwater processes (by pid), then PostgreSQL and Kafka."""
    for name, _pid in localstack.running_services():
        localstack.stop(localstack.Service(name, ()))
        console.print(f"stopped {name}")
    localstack.infra("down")


@app.command()
def ps() -> None:
    """List the running Headwater processes."""
    table = Table("process", "pid", "log")
    for name, pid in localstack.running_services():
        table.add_row(name, str(pid), str(localstack.Service(name, ()).log_file))
    console.print(table)


def _load_input(raw: str | None) -> Any:
    if raw is None:
        return None
    try:
        text = Path(raw[1:]).read_text() if raw.startswith("@") else raw
    except OSError as e:
        raise typer.BadParameter(f"cannot read --input file {raw[1:]!r}: {e.strerror}") from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise typer.BadParameter(f"--input is not JSON: {e}") from e


@app.command()
def submit(
    file: Annotated[Path, typer.Argument(help="workflow spec, YAML or JSON", exists=True)],
    input: Annotated[str | None, typer.Option("--input", "-i",
                     help="input as JSON, or @file.json")] = None,
    id: Annotated[str | None, typer.Option(help="workflow id (idempotency key)")] = None,
    tenant: Annotated[str | None, typer.Option()] = None,
    follow_: Annotated[bool, typer.Option("--follow/--no-follow",
                       help="watch progress until the workflow ends")] = False,
    gateway: str = GATEWAY,
) -> None:
    """Submit a workflow; with --follow, show its progress and print its output."""
    try:
        spec = yaml.safe_load(file.read_text())
    except yaml.YAMLError as e:
        _fail(f"{file}: not valid YAML or JSON: {e}")
    body: dict[str, Any] = {"workflow": spec, "input": _load_input(input)}
    if id:
        body["id"] = id
    if tenant:
        body["tenant"] = tenant
    with _gateway_errors(gateway), httpx.Client(base_url=gateway, timeout=30) as client:
        started = time.monotonic()
        response = client.post("/v1/workflows", json=body)
        if response.status_code >= 400:
            _problem(response)
        workflow_id = response.json()["id"]
        console.print(f"workflow [bold]{escape(workflow_id)}[/] {response.json()['status']}")
        if not follow_:
            return
        state = follow(client, f"/v1/workflows/{workflow_id}/events", console)
    elapsed = time.monotonic() - started
    console.print(f"{styled(state.status)} in {elapsed:.2f} s, "
                  f"{state.tasks_run} task attempt{'s' if state.tasks_run != 1 else ''}, "
                  f"{state.last_seq} events")
    if state.status == WorkflowStatus.SUCCEEDED:
        console.print_json(json.dumps(state.output))
    else:
        console.print(f"[red]{escape(str(state.error))}[/]")
        raise typer.Exit(1)


@app.command()
def status(
    workflow_id: Annotated[str, typer.Argument(help="workflow id")],
    gateway: str = GATEWAY,
    as_json: Annotated[bool, typer.Option("--json", help="print the raw JSON")] = False,
) -> None:
    """Show a workflow's status, nodes and output."""
    with _gateway_errors(gateway):
        response = httpx.get(f"{gateway}/v1/workflows/{workflow_id}", timeout=30)
    if response.status_code >= 400:
        _problem(response)
    if as_json:
        console.print_json(response.text)
        return
    doc = response.json()
    console.print(f"[bold]{escape(doc['id'])}[/] {escape(doc['name'])} "
                  f"{styled(doc['status'])} seq {doc['seq']}")
    table = Table("node", "kind", "status", "succeeded", "failed", "error")
    for n in doc["nodes"]:
        total = f"/{n['total']}" if n["total"] is not None else ""
        table.add_row(escape(n["id"]), n["kind"], n["status"], f"{n['succeeded']}{total}",
                      str(n["failed"]), escape((n["error"] or "")[:60]))
    console.print(table)
    if doc["output"] is not None:
        console.print_json(json.dumps(doc["output"]))
    elif doc["error"]:
        console.print(f"[red]{escape(str(doc['error']))}[/]")


@app.command()
def cancel(
    workflow_id: Annotated[str, typer.Argument(help="workflow id")],
    reason: Annotated[str, typer.Option(help="why, recorded in the history")] = "",
    gateway: str = GATEWAY,
) -> None:
    """Cancel a running workflow."""
    with _gateway_errors(gateway):
        response = httpx.post(f"{gateway}/v1/workflows/{workflow_id}/cancel",
                              json={"reason": reason}, timeout=30)
    if response.status_code >= 400:
        _problem(response)
    console.print(f"cancel of {escape(workflow_id)} requested")


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON value")


def signal_fields(pairs: list[str]) -> dict[str, Any]:
    """The fields of ``--field NAME=VALUE`` options: each value as JSON when it parses
    as JSON (``true``, ``3``, ``{"a": 1}``, ``"quoted"``), else as the string it is
    (``yes``, ``two words``). ``NaN`` and ``Infinity`` are strings: JSON has no such
    numbers.

    Raises:
        typer.BadParameter: a pair without ``=`` or without a name, or a name given twice.
    """
    fields: dict[str, Any] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"--field {pair!r}: expected NAME=VALUE")
        if name in fields:
            raise typer.BadParameter(f"--field {name} is given twice")
        try:
            fields[name] = json.loads(raw, parse_constant=_reject_constant)
        except ValueError:  # json.JSONDecodeError is one
            fields[name] = raw
    return fields


@app.command()
def signal(
    workflow_id: Annotated[str, typer.Argument(help="workflow id")],
    name: Annotated[str, typer.Argument(help="the signal's name (a wait node's signal:)")],
    field: Annotated[list[str] | None, typer.Option(
        "--field", "-f", help="a field as NAME=VALUE (VALUE is JSON when it parses, "
                              "else a string); repeat for each field")] = None,
    index: Annotated[int | None, typer.Option(
        min=0, help="the map item whose wait it is for (a wait with over)")] = None,
    signal_id: Annotated[str | None, typer.Option(
        "--id", help="the signal's id: sending the same id again changes nothing "
                     "(default: a random one)")] = None,
    gateway: str = GATEWAY,
) -> None:
    """Send a signal to a workflow's wait node, e.g. ``headwater signal wf-1 approval
    --field approved=true --field note="looks good"``."""
    body: dict[str, Any] = {"fields": signal_fields(field or [])}
    if index is not None:
        body["index"] = index
    if signal_id is not None:
        body["signal_id"] = signal_id
    with _gateway_errors(gateway):
        response = httpx.post(f"{gateway}/v1/workflows/{quote(workflow_id, safe='')}"
                              f"/signals/{quote(name, safe='')}", json=body, timeout=30)
    if response.status_code >= 400:
        _problem(response)
    console.print(f"signal {escape(name)} sent to {escape(workflow_id)} "
                  f"(signal id {escape(response.json()['signal_id'])})")


# The audit commands live in their own modules (they read Kafka and PostgreSQL directly).
app.command()(replay)
app.command()(stuck)
app.add_typer(projection_app, name="projection")


def main() -> None:
    """Entry point of the ``headwater`` script."""
    sys.exit(app())
