"""``headwater stuck``: list running workflows that nothing will ever move.

The source of truth is the history: every workflow's events are read from the events
topic and folded (docs/architecture.md §3, invariant 1). The coordinator's table is a
cache of the same state, and ``headwater replay ID`` checks that they agree; reading the
log instead also finds workflows whose table entry is lost.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ops.cli.endpoints import BOOTSTRAP, PREFIX, Endpoints, endpoints
from ops.cli.kafkalog import KafkaLog
from ops.cli.replay import EXIT_DIFFERENT, EXIT_UNREACHABLE, UNREACHABLE
from ops.history import Recorded
from ops.stuck import GRACE_MS, Scan, scan
from services.common.clock import now_ms
from services.common.topic_reader import TopicReader
from services.worker.announce import latest, serving_at

console = Console(soft_wrap=True, emoji=False)  # "retry:a:2" is no emoji code
errors = Console(soft_wrap=True, stderr=True, emoji=False)


def stuck(
    older_than: Annotated[float, typer.Option(
        "--older-than", help="ignore workflows whose last event is younger than this, "
        "seconds (their next event may be on its way)")] = 0.0,
    grace: Annotated[float, typer.Option(
        "--grace", help="how late a sleep's wake-up, or a child workflow's start or end, "
        "may be before its workflow counts as stuck, seconds")] = GRACE_MS / 1000,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
    bootstrap: str | None = BOOTSTRAP,
    prefix: str = PREFIX,
) -> None:
    """List running workflows with no attempt queued or running, no timer and no wait.

    Folds every workflow's history from the events topic. A workflow waiting for a
    signal (with or without a timeout) or sleeping until its wake-up is not stuck; one
    whose sleep is overdue, or whose child workflow has vanished (no history, or ended
    without the parent hearing, longer than --grace ago), is. Exit status: 0 none
    stuck, 1 some stuck or a history that does not fold, 3 Kafka unreachable. Histories
    whose start was deleted by the topic's retention are listed but not judged. An
    attempt dispatched on a queue without a live worker serving its task (the workers
    topic's announcements) is listed too.
    """
    ep = endpoints(bootstrap, prefix, None)
    try:
        histories, problems, serving = asyncio.run(_read_all(ep))
    except UNREACHABLE as e:
        console.print(f"[red]error:[/] cannot read the log ({escape(str(e))}); is "
                      "the stack up?")
        raise typer.Exit(EXIT_UNREACHABLE) from e
    for problem in problems:
        errors.print(f"[yellow]note:[/] {escape(problem)}")
    found = scan(histories, now_ms(), round(older_than * 1000), round(grace * 1000),
                 serving)
    if as_json:
        typer.echo(json.dumps(to_json(found), indent=2))
    else:
        show(found)
    if found.stuck or found.unfoldable:
        raise typer.Exit(EXIT_DIFFERENT)


async def _read_all(ep: Endpoints) -> tuple[dict[str, list[Recorded]], list[str],
                                            dict[str, set[str]] | None]:
    histories, problems = await read_histories(ep)
    return histories, problems, await read_serving(ep)


async def read_serving(ep: Endpoints) -> dict[str, set[str]] | None:
    """Queue -> the tasks its live workers serve, from the workers topic; None when the
    topic does not exist (workers that do not announce themselves: not judged)."""
    async with TopicReader(ep.bootstrap, max_message_bytes=ep.max_message_bytes,
                           security=ep.kafka_security) as reader:
        partitions = await reader.partitions(ep.topics.workers)
        if not partitions:
            return None
        records = await reader.read_to_end(ep.topics.workers, partitions)
    return serving_at(latest((r.key, r.value) for r in records), now_ms())


async def read_histories(ep: Endpoints) -> tuple[dict[str, list[Recorded]], list[str]]:
    """Every workflow's records on the events topic, and the undecodable ones."""
    async with KafkaLog(ep) as log:
        return await log.all_events()


def to_json(found: Scan) -> dict[str, object]:
    """The scan as one JSON-ready document."""
    return {
        "workflows": found.workflows, "running": found.running, "recent": found.recent,
        "stuck": [{"workflow_id": s.workflow_id, "name": s.name, "seq": s.seq,
                   "updated_at_ms": s.updated_at_ms, "reason": s.reason}
                  for s in found.stuck],
        "unfoldable": [{"workflow_id": w, "error": e} for w, e in found.unfoldable],
        "truncated": [{"workflow_id": w, "first_seq": s} for w, s in found.truncated],
    }


def show(found: Scan) -> None:
    """Print the scan for people."""
    console.print(f"{found.workflows} workflows in the log, {found.running} running"
                  + (f" ({found.recent} updated too recently to judge)" if found.recent else ""))
    if found.stuck:
        table = Table("workflow", "name", "seq", "last event (UTC)", "reason")
        for s in found.stuck:
            at = datetime.fromtimestamp(s.updated_at_ms / 1000, tz=UTC)
            table.add_row(escape(s.workflow_id), escape(s.name), str(s.seq),
                          at.strftime("%Y-%m-%d %H:%M:%S"), escape(s.reason))
        console.print(table)
    for workflow_id, error in found.unfoldable:
        console.print(f"[red]does not fold:[/] {escape(workflow_id)}: {escape(error)}")
    for workflow_id, first in found.truncated:
        console.print(f"[yellow]not judged:[/] {escape(workflow_id)}: its history starts at seq "
                      f"{first} (older events deleted by retention)")
    if found.stuck:
        console.print(f"[red]{len(found.stuck)} stuck workflow(s)[/]")
    else:
        console.print("[green]no stuck workflows[/]")
