"""``headwater replay ID``: fold a workflow's history from the log, show its timeline,
and compare the state with the coordinator's table and the PostgreSQL projection.

Reads, in this order so that each store is read no later than the log it derives from:
the projector's committed offset, the projection's rows, the table's changelog, then the
events topic. The comparison rules are in ``ops.audit``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import asyncpg
import orjson
import typer
from aiokafka.errors import KafkaError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from headwater.core.retention import load_marker
from headwater.core.state import WorkflowState
from headwater.errors import DecodeError
from ops.audit import (
    Observed,
    Report,
    StoreCheck,
    audit,
    event_counts,
    node_counts,
    past_retention,
    verdict,
)
from ops.cli.endpoints import BOOTSTRAP, PG_DSN, PREFIX, Endpoints, endpoints
from ops.cli.kafkalog import KafkaLog
from ops.cli.pgread import read_rows
from ops.history import TimelineRow, timeline
from services.common.clock import now_ms
from services.coordinator.keys import DEFERRED, DEFINITION
from services.coordinator.layout import load_split
from services.coordinator.retention import PURGED
from services.coordinator.snapshot import dump_state

console = Console(soft_wrap=True, emoji=False)  # "retry:a:2" is no emoji code
EXIT_DIFFERENT, EXIT_UNKNOWN, EXIT_UNREACHABLE = 1, 2, 3
UNREACHABLE = (OSError, asyncpg.PostgresError, KafkaError, TimeoutError)
"""What reading Kafka or PostgreSQL raises when they are down or slow."""
SUMMARY_TYPES = 8
"""The most event types a summary names (the rest counted together)."""
SUMMARY_DIFFERENCES = 10
"""The most differences a summary lists (the rest counted)."""


def replay(
    workflow_id: Annotated[str, typer.Argument(help="workflow id")],
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
    summary: Annotated[bool, typer.Option(
        "--summary", help="the verdict first, then counts of events and nodes, the stores "
                          "and the first differences, without the timeline")] = False,
    grace: Annotated[float, typer.Option(
        help="seconds the table may lack the newest events before that is a difference"
    )] = 30.0,
    bootstrap: str | None = BOOTSTRAP,
    prefix: str = PREFIX,
    pg_dsn: str | None = PG_DSN,
) -> None:
    """Replay a workflow's history from the events topic and audit the stores.

    Prints the timeline, then every difference between the folded state and the
    coordinator's table (field by field) and the projection's rows; with --summary, the
    verdict first and a few lines instead. A store behind the log is compared with the
    history up to its own seq and reported as behind (the projection is eventually
    consistent). Exit status: 0 everything matches, 1 a difference, 2 unknown workflow,
    3 Kafka or PostgreSQL unreachable.
    """
    ep = endpoints(bootstrap, prefix, pg_dsn)
    try:
        report = asyncio.run(gather(ep, workflow_id, grace))
    except UNREACHABLE as e:
        console.print("[red]error:[/] cannot read the log or the projection "
                      f"({escape(f'{type(e).__name__}: {e}')}); is the stack up?")
        raise typer.Exit(EXIT_UNREACHABLE) from e
    if as_json:
        typer.echo(json.dumps(to_json(report), indent=2, default=str))
    elif summary:
        show_summary(report)
    else:
        show(report)
    if not report.known:
        raise typer.Exit(EXIT_UNKNOWN)
    if report.differences:
        raise typer.Exit(EXIT_DIFFERENT)


async def gather(ep: Endpoints, workflow_id: str, grace_s: float) -> Report:
    """Read the projector's offset, the projection, the table and the history; audit."""
    async with KafkaLog(ep) as log:
        committed = await log.committed(ep.topics.projection_group, ep.topics.events,
                                        workflow_id)
        rows = await read_rows(ep.pg_dsn, workflow_id)
        entries = await log.table_entries(workflow_id)
        table, table_error = decode_table(workflow_id, entries)
        records, problems = await log.workflow_events(workflow_id)
    observed = Observed(records, table, table_error, rows, committed, problems)
    report = audit(workflow_id, observed, now_ms(), round(grace_s * 1000))
    marker = entries.get(PURGED)
    if marker is not None and "" not in entries:  # past retention: nothing to compare
        return past_retention(report, load_marker(marker))
    return report


def decode_table(workflow_id: str, entries: dict[str, bytes]) -> tuple[WorkflowState | None,
                                                                       str]:
    """The state held in the table's entries (part -> bytes; ``""`` is the header).

    Returns:
        The state (None without a header) and why it could not be decoded, or ``""``.
    """
    header, definition = entries.get(""), entries.get(DEFINITION)
    if header is None:  # inputs waiting for its submission, or a purge's marker
        others = set(entries) - {DEFERRED, PURGED}
        return None, ("it has entries but no header" if others else "")
    if definition is None:
        return None, "its definition entry is missing"
    try:
        return load_split(header, definition, entries.get), ""
    except DecodeError as e:
        return None, f"its entries do not decode: {e}"


def to_json(report: Report) -> dict[str, Any]:
    """The report as one JSON-ready document."""
    state = report.fold.state
    return {
        "workflow_id": report.workflow_id,
        "known": report.known,
        "ok": report.known and not report.differences,
        "events": [{"seq": r.seq, "at_ms": r.at_ms, "type": r.type, "task": r.task,
                    "detail": r.detail} for r in _timeline(report)],
        "state": orjson.loads(dump_state(state)) if state is not None else None,
        "fold_error": report.fold.error or None,
        "table": _store_json(report.table),
        "projection": _store_json(report.projection),
        "notes": report.notes,
        "differences": [d.to_json() for d in report.differences],
    }


def _store_json(check: StoreCheck) -> dict[str, Any]:
    return {"held": check.held, "seq": check.seq, "compared_at": check.compared_at,
            "behind": check.behind,
            "matches": check.held and not check.differences and not check.behind}


def _timeline(report: Report) -> list[TimelineRow]:
    return timeline(r.event for r in report.events)


def show(report: Report) -> None:
    """Print the report for people."""
    state = report.fold.state
    if not report.known:
        console.print(f"[red]unknown workflow[/] {escape(report.workflow_id)}: nothing in the log, "
                      "the table or the projection")
        return
    rows = _timeline(report)
    if state is not None:
        since = f", accepted {rows[0].time()} UTC" if rows else ""
        console.print(f"[bold]{escape(state.workflow_id)}[/] {escape(state.name)} "
                      f"{state.status.value}, seq {state.seq}{since}")
    table = Table("seq", "+s", "type", "task", "detail")
    for column in table.columns[:4]:
        column.no_wrap = True
    start = rows[0].at_ms if rows else 0
    for r in rows:
        table.add_row(str(r.seq), f"{(r.at_ms - start) / 1000:.3f}", r.type, escape(r.task),
                      escape(r.detail))
    console.print(table)
    for check in (report.table, report.projection):
        _show_store(check)
    for note in report.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    for d in report.differences:
        console.print(f"[red]difference:[/] {escape(d.describe())}")
    if report.differences:
        console.print(f"[red]{len(report.differences)} difference(s)[/]")
    else:
        console.print("[green]no differences[/]")


def show_summary(report: Report) -> None:
    """Print the verdict first, then a few lines: the workflow, its events and nodes by
    type and status, the stores, notes, and the first ``SUMMARY_DIFFERENCES``
    differences."""
    colour = "red" if report.differences or not report.known else "green"
    console.print(f"[{colour}]{escape(verdict(report))}[/]")
    if not report.known:
        return
    state = report.fold.state
    if state is not None:
        # The ends alone, not the timeline: its details are what --summary leaves out.
        ends = timeline(r.event for r in (report.events[:1] + report.events[-1:]))
        took = (f", accepted {ends[0].time()} UTC, {(ends[-1].at_ms - ends[0].at_ms) / 1000:.3f}"
                " s from first to last event" if ends else "")
        console.print(f"{escape(state.workflow_id)} {escape(state.name)} "
                      f"{state.status.value}{took}")
    types = _counted(event_counts(report), SUMMARY_TYPES)
    console.print(f"events: {len(report.events)} ({escape(types)})")
    nodes = node_counts(report)
    if nodes:
        console.print(f"nodes: {sum(n for _, n in nodes)} ({_counted(nodes, len(nodes))})")
    for check in (report.table, report.projection):
        _show_store(check)
    for note in report.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    differences = report.differences
    for d in differences[:SUMMARY_DIFFERENCES]:
        console.print(f"[red]difference:[/] {escape(d.describe())}")
    if len(differences) > SUMMARY_DIFFERENCES:
        console.print(f"… and {len(differences) - SUMMARY_DIFFERENCES} more differences "
                      "(without --summary: all of them, and the timeline)")


def _counted(counts: list[tuple[str, int]], most: int) -> str:
    """``"TaskSucceeded 10, TaskDispatched 10, 3 other"``: the first ``most`` by name, the
    rest together."""
    shown = ", ".join(f"{name} {n}" for name, n in counts[:most])
    rest = sum(n for _, n in counts[most:])
    return f"{shown}, {rest} other" if rest else shown


def _show_store(check: StoreCheck) -> None:
    if check.differences or any(n.startswith("past retention") for n in check.notes):
        return  # a purged table's note says it all
    if check.held and not check.behind:
        console.print(f"{check.store}: matches the history at seq {check.seq}")
    elif check.behind:
        console.print(f"{check.store}: matches the history up to its seq {check.seq}")
