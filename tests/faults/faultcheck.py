"""Helpers of the fault-injection tests."""

from __future__ import annotations

from load.faultkit.run import RunReport


def explain(report: RunReport) -> str:
    """A failure message: the violations, the figures, the deaths and the logs."""
    lines = [f"{report.plan}: {len(report.violations)} violations", *report.violations[:40],
             f"figures: {report.figures}", f"deaths: {report.deaths}",
             f"rebalance steps: {report.steps}"]
    for wid, timeline in report.evidence.items():
        lines += [f"--- events of {wid} ---", *timeline[-120:]]
    lines.append(report.logs)
    return "\n".join(lines)
