"""``headwater submit``, ``status`` and ``cancel``: one workflow at a time, through the
Python client (``headwater.client``); ``client`` and ``gateway_errors`` are every
gateway command's (``headwater signal`` is ``ops.cli.signals``').

``submit`` chooses the workflow id (``wf-<uuid4 hex>``) before its first try unless
``--id`` gives one, and says so at once on stderr (``submitting wf-…``, not to be taken
for an accepted run): the client retries a connection error or a 503 with that same id,
so a retry can never start a second run (the gateway answers 200 for the same id and
body). A refusal (4xx) says the workflow was refused and not stored. Exit codes: 0
done, 1 unknown workflow (404) or, with ``--follow``, a run that ended other than
``succeeded``, 2 any other refusal or an unreachable gateway.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import orjson
import typer
from rich.markup import escape
from rich.table import Table

from headwater import errors
from ops.cli.common import (
    GATEWAY,
    auth_hint,
    console,
    errors_console,
    fail,
    gateway_token,
    print_table,
    styled,
    unreachable,
)
from ops.cli.labels import RunLabels, label_options, print_labels
from ops.cli.queue_notes import (
    node_status,
    paused_note,
    print_waiting,
    print_warnings,
    warn_later,
)

if TYPE_CHECKING:
    from headwater.client import Client


def client(gateway: str) -> Client:
    """A client of ``gateway`` (5 retries of a connection error or a 503) sending the
    commands' token (``common.gateway_token``). Values held by reference stay references
    (``{"$blob", "bytes", "href"}``): a command prints a 100 MB output as its link, which
    ``curl`` or ``Client.result`` fetches, not into the terminal."""
    from headwater.client import Client  # here: it imports httpx, which takes a while

    try:
        return Client(gateway, gateway_token() or "", resolve_blobs=False)
    except ValueError as e:  # a token that cannot be sent
        fail(str(e))


def problem(error: errors.HeadwaterHTTPError, refused: str = "") -> NoReturn:
    """End the command with the gateway's problem: its status, detail and each of its
    ``errors`` (for a 401 or 403, what token to set instead); exit 1 for a 404, else 2.

    Args:
        error: the gateway's answer.
        refused: what a 4xx refused (e.g. ``workflow wf-1``): the message then says it
            was refused and not stored.

    Raises:
        typer.Exit: always.
    """
    detail = error.detail or error.title
    listed = error.body.get("errors")
    lines = "".join(f"\n  - {e}" for e in (listed if isinstance(listed, list) else [])
                    if e != detail)
    prefix = f"{refused} refused, not stored: " if refused and error.status < 500 else ""
    hint = ("\n(`--queue-anyway` queues it all the same)"
            if refused and error.status == 400 and "queue_anyway" in detail else "")
    if auth_hint(error.status):
        hint = f": {auth_hint(error.status)}"
    fail(f"{prefix}{error.status} {detail}{lines}{hint}", 1 if error.status == 404 else 2)


@contextlib.contextmanager
def gateway_errors(gateway: str, refused: str = "") -> Iterator[None]:
    """Turn the client's errors into one line each (``problem``, ``unreachable``);
    ``refused`` as ``problem`` takes it."""
    try:
        yield
    except errors.GatewayUnreachable as e:
        unreachable(gateway, e.__cause__ or e)
    except errors.HeadwaterHTTPError as e:
        problem(e, refused)


def load_input(raw: str | None) -> Any:
    """``--input``: JSON text, or ``@file.json``; None when absent.

    Raises:
        typer.BadParameter: the file cannot be read, or the text is not JSON.
    """
    if raw is None:
        return None
    try:
        text = Path(raw[1:]).read_text() if raw.startswith("@") else raw
    except OSError as e:
        raise typer.BadParameter(f"cannot read --input file {raw[1:]!r}: {e.strerror}") from e
    try:  # orjson, as the gateway reads JSON: its messages name the fault (a trailing
        return orjson.loads(text)  # comma), and NaN is no number
    except orjson.JSONDecodeError as e:
        raise typer.BadParameter(f"--input is not JSON: {e}") from e


def submit(
    file: Annotated[Path, typer.Argument(help="workflow spec, YAML or JSON", exists=True)],
    input: Annotated[str | None, typer.Option("--input", "-i",
                     help="input as JSON, or @file.json")] = None,
    id: Annotated[str | None, typer.Option(
        help="workflow id (idempotency key; default: wf-<random>, chosen and printed "
             "before the first try)")] = None,
    tenant: Annotated[str | None, typer.Option()] = None,
    queue_anyway: Annotated[bool, typer.Option(
        "--queue-anyway", help="queue its tasks even on a queue without a live worker "
                               "serving them (else 400)")] = False,
    priority: Annotated[str | None, typer.Option(
        "--priority", "-p", help=f"{PRIORITY_HELP}; default: the spec's (5 without "
                                 "one)")] = None,
    refresh_cache: Annotated[bool, typer.Option(
        "--refresh-cache", help="bypass cache hits: its cached nodes compute and store "
                                "fresh outputs")] = False,
    label: RunLabels = None,
    follow_: Annotated[bool, typer.Option("--follow/--no-follow",
                       help="watch progress until the workflow ends")] = False,
    gateway: str = GATEWAY,
) -> None:
    """Submit a workflow; with --follow, show its progress and print its output."""
    from headwater.client.http import new_workflow_id

    spec = _spec(file)
    workflow_input = load_input(input)
    given_priority = priority_option(priority)
    labels = label_options(label or [], any_value=False)
    workflow_id = id or new_workflow_id()
    if id is None:
        errors_console.print(f"submitting {escape(workflow_id)} (the id is chosen before "
                             f"the first try: retrying with --id {escape(workflow_id)} is "
                             "safe)")
    started = time.monotonic()
    with gateway_errors(gateway), client(gateway) as hw:
        with gateway_errors(gateway, f"workflow {workflow_id}"):  # a 4xx: refused
            answer = hw.submit(spec, input=workflow_input, id=workflow_id, tenant=tenant,
                               queue_anyway=queue_anyway, priority=given_priority,
                               cache_refresh=refresh_cache, labels=labels or None)
        console.print(f"workflow [bold]{escape(workflow_id)}[/] " + (
            answer.status if answer.created else f"{answer.status} (submitted before)"))
        print_warnings({"warnings": answer.warnings}, console)
        if not follow_:
            return
        from ops.cli.follow import follow

        timer = warn_later(hw, workflow_id, console)
        try:
            state = follow(((e.type, e.id, e.data) for e in hw.events(workflow_id)), console)
        finally:
            timer.cancel()
    report(state, time.monotonic() - started)


PRIORITY_HELP = ("its priority among the dispatches waiting for a queue: 0-9 (higher "
                 "first) or low, normal, high")
"""The help of ``--priority`` (``submit``, ``run``), before its default."""


def priority_option(raw: str | None) -> int | str | None:
    """``--priority`` as the gateway takes it: a number, or a name.

    Raises:
        typer.BadParameter: it is neither (the core's message).
    """
    from headwater.core.priority import priority_fault

    if raw is None:
        return None
    value: int | str = int(raw) if raw.strip().isdigit() else raw.strip()
    fault = priority_fault(value)
    if fault is not None:
        raise typer.BadParameter(fault.removeprefix("priority: "))
    return value


def _spec(file: Path) -> dict[str, Any]:
    """The workflow in ``file`` (YAML or JSON). Raises ``typer.Exit`` (2) if it is not a
    mapping."""
    import yaml

    try:
        spec = yaml.safe_load(file.read_text())
    except yaml.YAMLError as e:
        fail(f"{file}: not valid YAML or JSON: {e}")
    if not isinstance(spec, dict):
        fail(f"{file}: a workflow is a mapping (name, nodes ...), not {type(spec).__name__}")
    return spec


def report(state: Any, elapsed: float) -> None:
    """Print how a followed run ended; exit 1 unless it succeeded."""
    console.print(f"{styled(state.status)} in {elapsed:.2f} s, "
                  f"{state.tasks_run} task attempt{'s' if state.tasks_run != 1 else ''}, "
                  f"{state.last_seq} events")
    if state.status == "succeeded":
        console.print_json(json.dumps(state.output))
    else:
        console.print(f"[red]{escape(str(state.error))}[/]")
        raise typer.Exit(1)


def status(
    workflow_id: Annotated[str, typer.Argument(help="workflow id")],
    gateway: str = GATEWAY,
    as_json: Annotated[bool, typer.Option("--json", help="print the raw JSON")] = False,
    traceback_: Annotated[bool, typer.Option(
        "--traceback/--no-traceback",
        help="print the traceback of the attempt that failed the run")] = True,
) -> None:
    """Show a workflow's status, nodes and output.

    A failed run also shows the attempt that failed it: its node and index, attempt,
    error type and message, and (unless ``--no-traceback``) its traceback.
    """
    with gateway_errors(gateway), client(gateway) as hw:
        doc = hw.get(workflow_id).raw
    if as_json:
        console.print_json(json.dumps(doc))
        return
    definition = doc.get("definition")
    made_from = (f" (definition {escape(str(definition.get('name')))}@"
                 f"{definition.get('version')})" if isinstance(definition, dict) else "")
    generation = doc.get("generation") or 1
    restarted = (f", generation {generation} (restarted {generation - 1} time"
                 f"{'s' if generation > 2 else ''} after a lost attempt; `headwater replay` "
                 "shows why)" if generation > 1 else "")
    priority = doc.get("priority")
    shown = f", priority {priority}" if isinstance(priority, int) and priority != 5 else ""
    console.print(f"[bold]{escape(doc['id'])}[/] {escape(doc['name'])}{made_from} "
                  f"{styled(doc['status'])} seq {doc['seq']}{shown}{restarted}"
                  f"{paused_note(doc.get('paused'))}")
    print_labels(doc.get("labels"))
    table = Table("node", "kind", "status", "succeeded", "failed", "error")
    for n in doc["nodes"]:
        total = f"/{n['total']}" if n["total"] is not None else ""
        cached = f" ({n['cached']} cached)" if n.get("cached") else ""
        held = f" ({n['held']} held)" if n.get("held") else ""
        table.add_row(escape(n["id"]), n["kind"],
                      escape(node_status(n, doc.get("tasks", [])) + held),
                      f"{n['succeeded']}{total}{cached}", str(n["failed"]),
                      escape((n["error"] or "")[:60]))
    print_table(table, whole=("node",))
    print_warnings(doc, console)
    print_waiting(doc, console)
    if doc["output"] is not None:
        console.print_json(json.dumps(doc["output"]))
    elif doc["error"]:
        console.print(f"[red]{escape(str(doc['error']))}[/]")
    print_reruns(doc)
    failure = doc.get("failure")
    if doc["status"] == "failed" and isinstance(failure, dict):
        print_failure(failure, traceback_)
        if failure.get("attempt") is not None:  # the input the failed attempt was given
            with gateway_errors(gateway), client(gateway) as hw:
                task = hw.task(workflow_id, str(failure["node"]), failure.get("index"))
            console.print(f"its input: {json.dumps(task.input)}", markup=False,
                          highlight=False, soft_wrap=True)
            console.print(f"(headwater task {workflow_id} {failure['node']}"
                          + (f" {failure['index']}" if failure.get("index") is not None
                             else "") + " shows every attempt)", markup=False,
                          highlight=False)


def print_reruns(doc: dict[str, Any]) -> None:
    """Print how a run is linked to reruns: the run it reruns and what it reused, and
    the runs that rerun it."""
    if doc.get("rerun_of"):
        reused = doc.get("reused") or {}
        items = ", ".join(f"{n}: {c} item{'s' if c != 1 else ''}"
                          for n, c in (reused.get("items") or {}).items())
        parts = [*(reused.get("nodes") or []), *([items] if items else [])]
        how = f"reset to {doc['reset']}" if doc.get("reset") else "rerun"
        console.print(f"a {how} of {escape(str(doc['rerun_of']))}; reused: "
                      f"{escape(', '.join(parts)) or 'nothing'}")
    if doc.get("reruns"):
        console.print(f"rerun as: {escape(', '.join(doc['reruns']))}")


def print_failure(failure: dict[str, Any], with_traceback: bool = True) -> None:
    """Print what failed a run (its document's ``failure``): ``failed at m[4], attempt 3:
    KeyError: 'x'``, then its traceback as the worker recorded it (or a line saying how
    to show it)."""
    where = str(failure.get("node"))
    if failure.get("index") is not None:
        where += f"[{failure['index']}]"
    if failure.get("attempt") is not None:
        where += f", attempt {failure['attempt']}"
    error_type, message = failure.get("error_type") or "", failure.get("message") or ""
    console.print(f"[red]failed at {escape(where)}: "
                  f"{escape(f'{error_type}: {message}' if error_type else message)}[/]")
    traceback = str(failure.get("traceback") or "").rstrip("\n")
    if traceback and with_traceback:
        console.print(traceback, markup=False, highlight=False, soft_wrap=True)
    elif traceback:
        lines = traceback.count("\n") + 1
        console.print(f"(a traceback of {lines} lines: --traceback shows it)")


def cancel(
    workflow_id: Annotated[str, typer.Argument(help="workflow id")],
    reason: Annotated[str, typer.Option(help="why, recorded in the history")] = "",
    gateway: str = GATEWAY,
) -> None:
    """Cancel a running workflow."""
    with gateway_errors(gateway), client(gateway) as hw:
        hw.cancel(workflow_id, reason)
    console.print(f"cancel of {escape(workflow_id)} requested")
