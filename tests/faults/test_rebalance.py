"""Coordinators 1 -> 2 -> 1 and workers 1 -> 3 -> 1 while a batch runs (a light version
of the full suite's 100 workflows): every invariant holds, including one effective
dispatch per task attempt, and every workflow ends as in a fault-free run."""

from __future__ import annotations

import pytest
from faultcheck import explain

from faultsuite.run import Plan, run
from faultsuite.suite import QUICK
from tests.polling import scaled

pytestmark = [pytest.mark.e2e, pytest.mark.faults]


@pytest.mark.timeout(scaled(420))
def test_scaling_up_and_down_mid_batch_changes_no_outcome(services: None) -> None:
    batch = QUICK.rebalance_batch()
    base = run(Plan("baseline"), batch)
    assert base.violations == [], explain(base)
    [plan] = QUICK.rebalance_plans()
    report = run(plan, batch, base.outcomes())
    assert report.violations == [], explain(report)
    assert report.figures["lost"] == {"submissions": 0, "stuck": 0, "mismatched": 0}
    steps = report.steps
    assert [s["what"] for s in steps] == ["coordinators 1 -> 2", "workers 1 -> 3",
                                          "coordinators 2 -> 1", "workers 3 -> 1"]
    assert all(s["settled_s"] is not None for s in steps), explain(report)
    # Scaling up happened while the batch ran (else nothing was rebalanced mid-work).
    assert steps[1]["terminal_share"] < 1.0, explain(report)
