"""``headwater dead-letters``: what the coordinators refused, and why.

Reads the dead-letter topic (``<prefix>.dlq``) from the beginning to its end, without a
consumer group, and prints one line per record: when it was dead-lettered, the record's
key (its workflow id), where it came from (``source-topic``, ``source-partition``,
``source-offset`` headers) and the ``reason`` header. The records' values are not
shown; ``--json`` prints the headers too (never an ``authorization`` header: the
coordinator drops it)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from headwater.topics import REASON_HEADER, SOURCE_TOPIC_HEADER
from ops.cli.common import console, fail, print_table
from ops.cli.endpoints import BOOTSTRAP, PREFIX, endpoints
from ops.cli.kafkalog import KafkaLog
from ops.cli.replay import EXIT_UNREACHABLE, UNREACHABLE


def describe(record: Any) -> dict[str, Any]:
    """A dead letter as ``{at, key, source, reason, headers}`` (``at``: RFC 3339, UTC)."""
    headers = {k: (v or b"").decode(errors="replace") for k, v in record.headers or ()}
    source = (f"{headers.get(SOURCE_TOPIC_HEADER, '?')}[{headers.get('source-partition', '?')}]"
              f"@{headers.get('source-offset', '?')}")
    at = datetime.fromtimestamp(record.timestamp / 1000, tz=UTC).isoformat(timespec="seconds")
    key = record.key.decode(errors="replace") if record.key is not None else None
    return {"at": at, "key": key, "source": source,
            "reason": headers.get(REASON_HEADER, ""), "headers": headers}


async def _read(bootstrap: str | None, prefix: str, key: str | None) -> list[dict[str, Any]]:
    ep = endpoints(bootstrap, prefix, None)
    topic = f"{ep.prefix}.dlq"
    wanted = None if key is None else key.encode()
    async with KafkaLog(ep) as log:
        records = await log.scan(topic, await log.partitions(topic),
                                 lambda k: wanted is None or k == wanted)
    found = [describe(r) for r in records]
    return sorted(found, key=lambda d: d["at"])


def dead_letters(
    workflow_id: Annotated[str | None, typer.Argument(
        help="only the dead letters keyed by this workflow id")] = None,
    last: Annotated[int, typer.Option("--last", min=1, help="show the newest N")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON document per line")] = False,
    bootstrap: str | None = BOOTSTRAP,
    prefix: str = PREFIX,
) -> None:
    """List the records the coordinators dead-lettered, with their reasons.

    Newest last.

    Exit status: 0 (none is 0 too), 3 Kafka unreachable.
    """
    try:
        found = asyncio.run(_read(bootstrap, prefix, workflow_id))[-last:]
    except UNREACHABLE as e:
        fail(f"cannot read the dead-letter topic: {e}", EXIT_UNREACHABLE)
    if as_json:
        for doc in found:
            print(json.dumps(doc))
        return
    if not found:
        console.print("no dead letters")
        return
    table = Table("at", "key", "from", "reason")
    for doc in found:
        table.add_row(doc["at"], escape(doc["key"] or "(none)"), escape(doc["source"]),
                      escape(doc["reason"]))
    print_table(table)
