"""Each infrastructure fault once, on the quick batch, each on a private broker and
database: the broker SIGKILLed mid-batch and started again 3 s later; the broker
frozen (SIGSTOP) for 20 s and thawed; PostgreSQL stopped at once for 20 s (60 s in
``make faults``) and started again.

While the part is lost, ``/ready`` answers 503 naming it within 5 s, and a read
answers 503 problem+json with ``Retry-After`` while PostgreSQL is down (200 while only
Kafka is); once it is back, ``/ready`` is 200 again by itself. The workflows go on
while PostgreSQL is down, every invariant holds, every workflow ends as in the
fault-free run, nothing is lost or stuck, and no process needs a restart by hand (one
that exits is restarted by the harness's supervisor and counted).
"""

from __future__ import annotations

import pytest
from faultcheck import explain

from faultsuite.audit import EndState
from faultsuite.batch import Submission
from faultsuite.run import run
from faultsuite.suite import INFRA, QUICK, infra_plan
from tests.polling import scaled

pytestmark = [pytest.mark.e2e, pytest.mark.faults]


@pytest.mark.timeout(scaled(420))
@pytest.mark.parametrize("name", INFRA)
def test_a_lost_broker_or_database_changes_no_outcome(name: str, batch: list[Submission],
                                                     expected: dict[str, EndState]) -> None:
    report = run(infra_plan(name, QUICK.postgres_down_s), batch, expected)
    assert report.violations == [], explain(report)
    figures = report.figures
    assert figures["lost"] == {"submissions": 0, "stuck": 0, "mismatched": 0}, explain(report)
    outage = figures["outage"]
    assert figures["outages"] == {name.split(".", 1)[1]: 1}, explain(report)
    # The fault came mid-batch, not after it.
    assert outage["terminal_share"] < 1.0, explain(report)
    if name == "infra.postgres_stop":
        assert outage["events_during"] > 0, "the workflows went on without PostgreSQL"
