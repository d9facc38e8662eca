"""The peers' table: one row per workload figure, one column per system (Headwater, each
peer, raw Kafka), and Headwater's ratio to each. Pure: values in, rows and Markdown out."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from load import stats
from load.report import value_cell

HEADWATER = "headwater"
RAW_KAFKA = "raw_kafka"
PEERS = ("celery", "dbos")
COLUMNS = (HEADWATER, *PEERS, RAW_KAFKA)
TITLES = {HEADWATER: "Headwater", "celery": "Celery + Redis", "dbos": "DBOS + PostgreSQL",
          RAW_KAFKA: "raw Kafka"}
Source = tuple[str, str] | None
"""Where a figure is in ``make bench``'s results: ``(benchmark, metric key)``."""


@dataclass(frozen=True)
class Row:
    """One figure of the table.

    Attributes:
        key: its key in the peers' drivers' output.
        label: what it measures.
        unit: ``/s`` or ``ms``.
        higher_is_better: a rate (True) or a time (False).
        headwater: where Headwater's figure is in ``make bench``'s results.
        raw_kafka: where raw Kafka's is (None: ``raw_per_record`` or none).
        raw_per_record: raw Kafka's figure is this many B1 pipelined records' time.
    """

    key: str
    label: str
    unit: str
    higher_is_better: bool
    headwater: Source
    raw_kafka: Source = None
    raw_per_record: int = 0


def rows(widths: Sequence[int]) -> list[Row]:
    """The table's rows, for maps of ``widths`` items."""
    out = [Row("tasks_per_s", "3-task chains submitted at once: tasks completed/s, steady "
               "(middle 80 %)", "/s", True, ("B2", "tasks_per_s_1_coordinator"),
               ("B1", "pipelined_per_s"))]
    for prefix, what, bench in (("hop", "chains 100 ms apart", "hop"),
                                ("loaded_hop", "chains 20 ms apart (loaded)", "loaded_hop")):
        out += [Row(f"{prefix}_p{q}_ms", f"hop, task end → next task start, {what}, p{q}",
                    "ms", False, ("B3", f"{bench}_p{q}_ms"), ("B1", f"rtt_p{q}_ms"))
                for q in stats.PERCENTILES]
    out += [Row(f"map_total_ms_{n}", f"map of {n:,} no-op items then a fan-in: total", "ms",
                False, ("B4", f"total_ms_{n}"), raw_per_record=n) for n in widths]
    out += [Row(f"submit_p{q}_ms", f"submit, sequential, until durably accepted, p{q}", "ms",
                False, ("B5", f"http_p{q}_ms"), ("B5", f"kafka_p{q}_ms")) for q in (50, 99)]
    return out


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _lookup(doc: Mapping[str, Any], source: Source) -> float | None:
    if source is None:
        return None
    bench, key = source
    return _finite(doc.get("benchmarks", {}).get(bench, {}).get("values", {}).get(key))


def columns(table_rows: Sequence[Row], bench_doc: Mapping[str, Any],
            peers: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Every column's figure of every row.

    Args:
        table_rows: ``rows(...)``.
        bench_doc: ``make bench``'s results document (``load.report.document``).
        peers: each peer's driver output, ``{peer: {row key: value}}`` (a peer that did
            not run may be missing).

    Returns:
        ``{column: {row key: value or None}}`` for every column of ``COLUMNS``.
    """
    rate = _lookup(bench_doc, ("B1", "pipelined_per_s"))
    out: dict[str, dict[str, float | None]] = {c: {} for c in COLUMNS}
    for row in table_rows:
        out[HEADWATER][row.key] = _lookup(bench_doc, row.headwater)
        raw = _lookup(bench_doc, row.raw_kafka)
        if row.raw_per_record and rate:
            raw = row.raw_per_record * 1000 / rate
        out[RAW_KAFKA][row.key] = raw
        for peer in PEERS:
            out[peer][row.key] = _finite(peers.get(peer, {}).get(row.key))
    return out


def ratios(values: Mapping[str, Mapping[str, float | None]]
           ) -> dict[str, dict[str, float | None]]:
    """Headwater's figure ÷ each other column's, row by row (None when either is missing
    or the divisor is 0). Above 1 is better for a rate, below 1 for a time."""
    out: dict[str, dict[str, float | None]] = {}
    for column in COLUMNS[1:]:
        out[column] = {}
        for key, mine in values[HEADWATER].items():
            theirs = values[column].get(key)
            out[column][key] = mine / theirs if mine is not None and theirs else None
    return out


def markdown(doc: Mapping[str, Any]) -> str:
    """The peers' document (``load.peers.__main__``) as a Markdown page."""
    values, ratio = doc["values"], doc["ratios"]
    lines = [f"# Headwater beside its peers — {doc['timestamp']} ({doc['mode']})", "",
             doc["preamble"], "",
             "| workload | better | " + " | ".join(TITLES[c] for c in COLUMNS) + " | "
             + " | ".join(f"HW ÷ {TITLES[c]}" for c in COLUMNS[1:]) + " |",
             "|---|---|" + "---:|" * (2 * len(COLUMNS) - 1)]
    for row in doc["rows"]:
        key = row["key"]
        cells = [value_cell(values[c].get(key), row["unit"]) for c in COLUMNS]
        cells += [_ratio(ratio[c].get(key)) for c in COLUMNS[1:]]
        better = "higher" if row["higher_is_better"] else "lower"
        lines.append(f"| {row['label']} | {better} | " + " | ".join(cells) + " |")
    lines += ["", "Guarantees differ:", *[f"- {g}" for g in doc["guarantees"]]]
    if doc["notes"]:
        lines += ["", "Notes:", *[f"- {n}" for n in doc["notes"]]]
    return "\n".join(lines) + "\n"


def _ratio(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:,.0f}x" if value >= 100 else f"{value:.2g}x"
