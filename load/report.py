"""The results of one run: a JSON document, a Markdown table and (``chart``) a PNG."""

from __future__ import annotations

import math
import os
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from load.metrics import Basis, Metric, divisor, ratio
from load.plan import Planned

BASELINE = "B1"
FORMATS = {"/s": "{:,.0f} /s", "bytes": "{:,.0f} bytes", "count": "{:,.0f}",
           "MiB": "{:,.1f} MiB", "s": "{:.2f} s"}
"""How the table writes a value of each unit (``ms`` and the rest: ``value_cell``)."""


@dataclass(frozen=True)
class BenchResult:
    """How one benchmark went.

    Attributes:
        planned: what ran.
        values: metric key -> value (empty when it failed early).
        wall_s: how long it took, seconds, deployments included.
        load_before: the machine's 1-minute load average when it started (other work on
            the machine skews the figures).
        error: why it failed, or None.
    """

    planned: Planned
    values: dict[str, float]
    wall_s: float
    load_before: float
    error: str | None = None


def document(outcomes: list[BenchResult], stamp: str, quick: bool, wall_s: float,
             notes: list[str]) -> dict[str, Any]:
    """The results document: every value, its ratio to B1, the settings and timings.

    Args:
        outcomes: the benchmarks run, B1 first.
        stamp: the run's UTC timestamp (``YYYYmmddTHHMMSSZ``).
        quick: whether the sizes were the quick ones.
        wall_s: the whole run's wall time, seconds.
        notes: warnings raised while measuring.
    """
    baseline = next((o.values for o in outcomes if o.planned.name == BASELINE), {})
    benchmarks = {}
    for o in outcomes:
        benchmarks[o.planned.name] = {
            "title": o.planned.title,
            "wall_s": round(o.wall_s, 2),
            "load_before": round(o.load_before, 2),
            "settings": o.planned.settings,
            "error": o.error,
            "metrics": [{"key": m.key, "label": m.label, "unit": m.unit, "basis": m.basis.value,
                         "basis_label": m.basis.label} for m in o.planned.metrics],
            "values": {m.key: _finite(o.values.get(m.key)) for m in o.planned.metrics},
            "ratios": {m.key: _finite(ratio(o.values.get(m.key), m.basis, baseline))
                       for m in o.planned.metrics if m.basis is not Basis.NONE},
        }
    return {
        "timestamp": stamp,
        "mode": "quick" if quick else "full",
        "wall_s": round(wall_s, 2),
        "machine": {"cpus": os.cpu_count() or 0, "python": platform.python_version(),
                    "platform": platform.platform()},
        "baseline": {b.value: divisor(b, baseline) for b in Basis if b is not Basis.NONE},
        "benchmarks": benchmarks,
        "notes": notes,
    }


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def write_json(doc: dict[str, Any], path: Path) -> None:
    """Write ``doc`` as indented JSON."""
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")


def markdown(doc: dict[str, Any]) -> str:
    """The results as a Markdown page: a header, one table row per figure, notes."""
    lines = [f"# Headwater vs raw Kafka — {doc['timestamp']} ({doc['mode']})", "",
             f"Local stack, one broker, {doc['machine']['cpus']} CPUs, Python "
             f"{doc['machine']['python']}; whole run {doc['wall_s']:.0f} s. Ratios divide each "
             "figure by the B1 figure named in the last column, measured in the same run. "
             "`concurrency` is each worker's HEADWATER_CONCURRENCY: raised to 64 for the "
             "throughput runs (B2, B2c, B4, B8), the default 8 for the others (B3, B3c, B5, "
             "B6, B7, B9).", ""]
    for name, bench in doc["benchmarks"].items():
        status = f"FAILED: {bench['error']}" if bench["error"] else f"{bench['wall_s']:.0f} s"
        lines.append(f"- **{name}** {bench['title']} — {status} (load average before: "
                     f"{bench['load_before']:.2f}); "
                     + ", ".join(f"{k}={v}" for k, v in bench["settings"].items()))
    lines += ["", "| bench | figure | value | x B1 | ratio basis |", "|---|---|---:|---:|---|"]
    for name, bench in doc["benchmarks"].items():
        for m in bench["metrics"]:
            value = bench["values"].get(m["key"])
            r = bench["ratios"].get(m["key"])
            lines.append(f"| {name} | {m['label']} | {value_cell(value, m['unit'])} | "
                         f"{_ratio(r)} | {m['basis_label']} |")
    if doc["notes"]:
        lines += ["", "Notes:", *[f"- {n}" for n in doc["notes"]]]
    return "\n".join(lines) + "\n"


def value_cell(value: float | None, unit: str) -> str:
    """``value`` as a results table writes a figure of ``unit`` (``FORMATS``; ``ms``
    to 3 significant digits below 100)."""
    if value is None:
        return "—"
    if unit in FORMATS:
        return FORMATS[unit].format(value)
    if unit == "ms":
        return f"{value:,.0f} ms" if value >= 100 else f"{value:.3g} ms"
    return f"{value:.2f}{unit}"


def _ratio(value: float | None) -> str:
    if value is None:
        return ""
    if value >= 100:
        return f"{value:,.0f}x"
    return f"{value:.1f}x" if value >= 10 else f"{value:.2f}x" if value >= 0.1 else f"{value:.2g}x"


def figures(doc: dict[str, Any]) -> list[Metric]:
    """Every metric of the document, as ``Metric`` objects (for the chart)."""
    return [Metric(m["key"], m["label"], m["unit"], Basis(m["basis"]))
            for bench in doc["benchmarks"].values() for m in bench["metrics"]]
