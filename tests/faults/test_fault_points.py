"""Each fault point once, on a small batch of every workflow shape: the run keeps every
invariant of docs/architecture.md §3 and ends every workflow as a fault-free run does.

``python -m faultsuite`` (``make faults``) runs the longer version: several runs per
point, several kills per run, bigger batches.
"""

from __future__ import annotations

import pytest
from faultcheck import assert_schedule_ran, explain

from faultsuite.audit import EndState
from faultsuite.batch import Submission
from faultsuite.run import run
from faultsuite.suite import OPERATION_KILL, POINTS, QUICK, point_plan
from tests.polling import scaled

pytestmark = [pytest.mark.e2e, pytest.mark.faults]


@pytest.mark.timeout(scaled(300))
@pytest.mark.parametrize("point", POINTS)
def test_a_killed_process_changes_no_outcome(point: str, batch: list[Submission],
                                            expected: dict[str, EndState]) -> None:
    report = run(point_plan(point, kills=QUICK.kills), batch, expected)
    assert report.violations == [], explain(report)
    figures = report.figures
    assert figures["lost"] == {"submissions": 0, "stuck": 0, "mismatched": 0}, explain(report)
    assert sum(figures["kills"].values()) >= 1, explain(report)
    assert_schedule_ran(report)
    if point == "gateway.after_produce":
        # The client lost its connection after the submission was stored; sending the same
        # id and body again gave the same run.
        assert figures["duplicates"]["http_same_run_after_connection_error"] >= 1, \
            explain(report)
    if point == OPERATION_KILL:
        # Each gateway killed after its batch of cancels left the operation to the next;
        # the last finished it, every labelled run counted once (the audit checked the
        # runs: each cancelled once, none without the label touched).
        operation = figures["bulk"]["operation"]
        assert operation["state"] == "done" and operation["counts"]["done"] == \
            operation["matched"] > 0, explain(report)
