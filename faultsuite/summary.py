"""The JSON summary of a suite: per run, and totals over the runs under faults."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from faultsuite.verdict import RunReport


def _add(total: dict[str, Any], part: dict[str, Any]) -> None:
    """Add the integers of ``part`` into ``total``, recursively."""
    for key, value in part.items():
        if isinstance(value, dict):
            _add(total.setdefault(key, {}), value)
        elif isinstance(value, int) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + value


FIGURES = ("workflows", "child_workflows", "tasks", "attempts_dispatched", "attempts_started",
           "attempts_lost_to_faults", "duplicates", "lost", "kills", "pauses", "outages",
           "restarts", "exits", "restarts_in_place", "schedule", "dead_letters", "tenants")
"""The figures summed over runs (of ``schedule``: its fires, runs and outcomes)."""


def _group(plan: str) -> str:
    """Which total a run counts in: ``rebalance``, ``infra`` or ``fault_points``."""
    if plan.startswith("rebalance"):
        return "rebalance"
    return "infra" if plan.startswith("infra.") else "fault_points"


def summarise(suite: str, baselines: Sequence[RunReport], runs: Sequence[RunReport],
              started: float, began_at: datetime, auth: bool = False) -> dict[str, Any]:
    """The summary document.

    Args:
        suite: the suite's name.
        baselines: the fault-free runs (their figures are the reference).
        runs: the runs under faults and the rebalance runs (named ``rebalance...``).
        started: ``time.monotonic()`` at the start.
        began_at: the wall-clock start.
        auth: whether the runs had auth on (``--auth``).
    """
    per_plan: dict[str, int] = {}
    totals: dict[str, dict[str, Any]] = {"fault_points": {}, "infra": {}, "rebalance": {},
                                         "all": {}}
    for r in runs:
        per_plan[r.plan] = per_plan.get(r.plan, 0) + 1
        figures = {k: v for k, v in r.figures.items() if k in FIGURES}
        _add(totals[_group(r.plan)], figures)
        _add(totals["all"], figures)
    violations = [f"{r.plan}: {v}" for r in [*baselines, *runs] for v in r.violations]
    return {
        "suite": suite,
        "auth": auth,
        "started_at": began_at.isoformat(timespec="seconds"),
        "duration_s": round(time.monotonic() - started, 1),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_average": [round(x, 2) for x in os.getloadavg()]},
        "fault_points": sum(1 for p in per_plan if _group(p) == "fault_points"),
        "infra_faults": sum(1 for p in per_plan if _group(p) == "infra"),
        "rebalance_scenarios": sum(1 for p in per_plan if _group(p) == "rebalance"),
        "runs_per_plan": per_plan,
        "runs": len(runs),
        "totals": totals,
        "duplicates_absorbed": sum(totals["all"].get("duplicates", {}).values()),
        "lost": sum(totals["all"].get("lost", {}).values()),
        "stuck": totals["all"].get("lost", {}).get("stuck", 0),
        "violations": violations,
        "baselines": [b.as_dict() for b in baselines],
        "details": [r.as_dict() for r in runs],
    }


def write(doc: dict[str, Any], out_dir: Path, began_at: datetime) -> Path:
    """Write ``faults-<UTC time>.json`` under ``out_dir``; return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"faults-{began_at.astimezone(UTC).strftime('%Y%m%dT%H%M%SZ')}.json"
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return path


def table(doc: dict[str, Any]) -> str:
    """A few lines for a terminal: one per run, then the totals."""
    lines = [f"{'run':<34} {'wf':>4} {'tasks':>6} {'kills':>5} {'pause':>5} {'outage':>6} "
             f"{'dupes':>6} {'lost':>4} {'viol':>4} {'s':>6}"]
    for r in doc["details"]:
        f = r["figures"]
        lines.append(
            f"{r['plan']:<34} {f.get('workflows', 0):>4} {f.get('tasks', 0):>6} "
            f"{sum(f.get('kills', {}).values()):>5} {f.get('pauses', 0):>5} "
            f"{sum(f.get('outages', {}).values()):>6} "
            f"{sum(f.get('duplicates', {}).values()):>6} "
            f"{sum(f.get('lost', {}).values()):>4} {len(r['violations']):>4} "
            f"{f.get('duration_s', 0):>6}")
    t = doc["totals"]["all"]
    lines.append(f"{doc['fault_points']} fault points, {doc.get('infra_faults', 0)} "
                 f"infrastructure faults and {doc['rebalance_scenarios']} rebalance "
                 f"scenarios, {doc['runs']} runs: {t.get('workflows', 0)} workflows "
                 f"(and {t.get('child_workflows', 0)} child workflows), "
                 f"{t.get('tasks', 0)} tasks, {sum(t.get('kills', {}).values())} kills, "
                 f"{t.get('pauses', 0)} pauses, {sum(t.get('outages', {}).values())} outages, "
                 f"{sum(t.get('restarts', {}).values())} restarts, "
                 f"{doc['duplicates_absorbed']} duplicates absorbed, {doc['lost']} lost, "
                 f"{doc.get('stuck', 0)} stuck, {len(doc['violations'])} violations, "
                 f"{doc['duration_s']} s")
    return "\n".join(lines)
