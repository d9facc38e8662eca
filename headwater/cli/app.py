"""The ``headwater`` command: run the local stack, submit and watch workflows."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
import yaml
from rich.console import Console
from rich.table import Table

from headwater import localstack
from headwater.cli.follow import STYLE, follow

app = typer.Typer(help="Headwater: event-sourced workflows on Kafka.", no_args_is_help=True,
                  add_completion=False)
console = Console()
GATEWAY = typer.Option("http://127.0.0.1:8080", envvar="HEADWATER_GATEWAY_URL",
                       help="gateway base URL")


@app.command()
def up(
    workers: Annotated[int, typer.Option(help="worker processes for the queue")] = 1,
    queue: Annotated[str, typer.Option(help="queue the workers serve")] = "cpu",
    tasks: Annotated[list[str] | None, typer.Option(help="task modules to import")] = None,
    gateway: str = GATEWAY,
) -> None:
    """Start Kafka, PostgreSQL, the coordinator, the gateway and workers (idempotent)."""
    localstack.infra("up")
    pids = [localstack.start(s) for s in localstack.default_services(
        tasks or [localstack.EXAMPLE_TASKS], workers, queue)]
    console.print("waiting for the gateway to be ready ...")
    localstack.wait_ready(f"{gateway}/ready", pids=pids)
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
    text = Path(raw[1:]).read_text() if raw.startswith("@") else raw
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
    body: dict[str, Any] = {"workflow": yaml.safe_load(file.read_text()),
                            "input": _load_input(input)}
    if id:
        body["id"] = id
    if tenant:
        body["tenant"] = tenant
    with httpx.Client(base_url=gateway, timeout=30) as client:
        started = time.monotonic()
        response = client.post("/v1/workflows", json=body)
        if response.status_code >= 400:
            console.print_json(response.text)
            raise typer.Exit(2)
        workflow_id = response.json()["id"]
        console.print(f"workflow [bold]{workflow_id}[/] {response.json()['status']}")
        if not follow_:
            return
        state = follow(client, f"/v1/workflows/{workflow_id}/events", console)
    elapsed = time.monotonic() - started
    console.print(f"[{STYLE.get(state.status, '')}]{state.status}[/] in {elapsed:.2f} s, "
                  f"{state.tasks_run} task attempts, {state.last_seq} events")
    if state.status == "succeeded":
        console.print_json(json.dumps(state.output))
    else:
        console.print(f"[red]{state.error}[/]")
        raise typer.Exit(1)


@app.command()
def status(
    workflow_id: Annotated[str, typer.Argument(help="workflow id")],
    gateway: str = GATEWAY,
    as_json: Annotated[bool, typer.Option("--json", help="print the raw JSON")] = False,
) -> None:
    """Show a workflow's status, nodes and output."""
    response = httpx.get(f"{gateway}/v1/workflows/{workflow_id}", timeout=30)
    if response.status_code >= 400 or as_json:
        console.print_json(response.text)
        raise typer.Exit(0 if response.status_code < 400 else 1)
    doc = response.json()
    console.print(f"[bold]{doc['id']}[/] {doc['name']} "
                  f"[{STYLE.get(doc['status'], '')}]{doc['status']}[/] seq {doc['seq']}")
    table = Table("node", "kind", "status", "succeeded", "failed", "error")
    for n in doc["nodes"]:
        total = f"/{n['total']}" if n["total"] is not None else ""
        table.add_row(n["id"], n["kind"], n["status"], f"{n['succeeded']}{total}",
                      str(n["failed"]), n["error"][:60])
    console.print(table)
    if doc["output"] is not None:
        console.print_json(json.dumps(doc["output"]))
    elif doc["error"]:
        console.print(f"[red]{doc['error']}[/]")


def main() -> None:
    """Entry point of the ``headwater`` script."""
    sys.exit(app())
