"""The coordinator SIGKILLed with a large table, its local store lost at each restart
(``faultsuite.large_table``), on the quick batch: 1,000 finished and 50 waiting workflows
filled before it (5,000 and 200 in ``make faults``), a kill from outside mid-batch and
one at ``coordinator.after_intent``, the coordinator's data directory deleted before
each restart. Every invariant holds, the batch ends as in the fault-free run, and every
waiting workflow, signalled after the restarts, succeeds; nothing is lost or stuck.
"""

from __future__ import annotations

import pytest
from faultcheck import explain

from faultsuite.audit import EndState
from faultsuite.batch import Submission
from faultsuite.run import run
from faultsuite.suite import QUICK, large_table_plan
from tests.polling import scaled

pytestmark = [pytest.mark.e2e, pytest.mark.faults]


@pytest.mark.timeout(scaled(420))
def test_a_coordinator_that_lost_its_store_recovers_a_large_table(
        batch: list[Submission], expected: dict[str, EndState]) -> None:
    report = run(large_table_plan(QUICK.table, QUICK.table_kills), batch, expected)
    assert report.violations == [], explain(report)
    figures = report.figures
    assert figures["lost"] == {"submissions": 0, "stuck": 0, "mismatched": 0}, explain(report)
    table = figures["table"]
    assert figures["filled_workflows"] == QUICK.table.finished + QUICK.table.waiting
    assert len(table["recoveries"]) == QUICK.table_kills, explain(report)
    assert all(r["first_record_s"] is not None for r in table["recoveries"]), explain(report)
