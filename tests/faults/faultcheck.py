"""Helpers of the fault-injection tests."""

from __future__ import annotations

from faultsuite.verdict import RunReport


def explain(report: RunReport) -> str:
    """A failure message: the violations, the figures, the deaths and the logs."""
    lines = [f"{report.plan}: {len(report.violations)} violations", *report.violations[:40],
             f"figures: {report.figures}", f"deaths: {report.deaths}",
             f"rebalance steps: {report.steps}"]
    for wid, timeline in report.evidence.items():
        lines += [f"--- events of {wid} ---", *timeline[-120:]]
    lines.append(report.logs)
    return "\n".join(lines)


def assert_schedule_ran(report: RunReport) -> None:
    """The schedule beside the batch fired and each fire started a run (how many
    depends on time; its invariants are among the run's violations)."""
    schedule = report.figures["schedule"]
    assert schedule["fires"] >= 1, explain(report)
    assert schedule["outcomes"] == {"started": schedule["fires"]}, explain(report)
    assert schedule["runs"] == schedule["fires"], explain(report)
