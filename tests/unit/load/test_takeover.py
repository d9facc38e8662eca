"""B9's takeover arithmetic (``load.takeover.Takeover``): a partition counts as served
again only by a probe produced after the group was seen stable with both coordinators
(no broker: records are built by hand)."""

from __future__ import annotations

import pytest

from headwater.core import events as ev
from load.kafka_io import Seen
from load.takeover import Takeover, takeover_figures


def ended(ms: int, wid: str, ok: bool = True) -> Seen:
    body: ev.Body = (ev.WorkflowSucceeded(wid, ms, None) if ok
                     else ev.WorkflowFailed(wid, ms, "boom"))
    return Seen(ms, 0, ev.HistoryEvent(wid, 3, body))


def test_probes_before_the_rebalance_do_not_count() -> None:
    seen = Takeover(2, started_ms=1000)
    seen.sent("early-0", 0)
    seen.sent("early-1", 1)
    seen.see(ended(1050, "early-0"))  # the old coordinator, before the newcomer joined
    seen.see(ended(1060, "early-1"))
    assert seen.unserved() == {0, 1} and not seen.done()
    seen.stable_ms = 5000
    seen.sent("late-0", 0)
    seen.sent("late-1", 1)
    seen.see(ended(5100, "late-0"))
    assert seen.first_after_ms == 5100 and seen.unserved() == {1}
    seen.see(ended(9000, "late-1"))
    assert seen.done()
    assert takeover_figures(seen) == (4.0, 4.1, 8.0)


def test_a_partition_is_served_at_its_first_post_rebalance_probe() -> None:
    seen = Takeover(1, started_ms=0, stable_ms=100)
    seen.sent("a", 0)
    seen.sent("b", 0)
    seen.see(ended(700, "a"))
    seen.see(ended(900, "b"))  # a later round's probe changes nothing
    assert seen.served_ms == {0: 700}


def test_any_record_after_the_rebalance_is_the_first_progress() -> None:
    seen = Takeover(1, started_ms=0)
    seen.see(ended(50, "someone-else"))
    assert seen.first_after_ms is None
    seen.stable_ms = 100
    seen.see(ended(100, "someone-else"))  # not later than the rebalance
    seen.see(ended(130, "someone-else"))
    assert seen.first_after_ms == 130


def test_a_failed_probe_ends_the_wait_and_is_an_error() -> None:
    seen = Takeover(2, started_ms=0, stable_ms=10)
    seen.sent("p", 0)
    seen.see(ended(20, "p", ok=False))
    assert seen.done()
    with pytest.raises(RuntimeError, match="1 takeover probes did not succeed"):
        takeover_figures(seen)


def test_an_unfinished_takeover_is_an_error() -> None:
    seen = Takeover(2, started_ms=0, stable_ms=10)
    seen.sent("p", 0)
    seen.see(ended(20, "p"))
    with pytest.raises(RuntimeError, match=r"not served again: \[1\]"):
        takeover_figures(seen)
