"""The benchmarks' pure arithmetic: a chain's hops split at the dispatch record, and a
pool's shares of the attempts (no broker: records are built by hand)."""

from __future__ import annotations

from collections import Counter

import pytest

from headwater.core import events as ev
from load.b8_workers import _shares
from load.chains import Chains, Stamps, samples
from load.kafka_io import Seen

WF = "wf-1"


def seen(ms: int, value: object) -> Seen:
    return Seen(ms, 0, value)


def two_step_chain() -> Chains:
    stamps = Stamps({WF})
    stamps.see_report(seen(100, ev.TaskStarted(WF, "n0", None, 1, 0, "w")))
    stamps.see_report(seen(150, ev.TaskSucceeded(WF, "n0", None, 1, 0, None)))
    stamps.see_report(seen(152, ev.TaskSucceeded(WF, "n0", None, 1, 0, None)))  # again: ignored
    stamps.see_dispatch(seen(160, ev.TaskDispatched(WF, "n1", None, 1, "t", "cpu", None, 0)))
    stamps.see_report(seen(175, ev.TaskStarted(WF, "n1", None, 1, 0, "w")))
    stamps.see_report(seen(175, ev.TaskStarted("other", "n1", None, 1, 0, "w")))  # not a chain
    stamps.see_event(seen(104, ev.HistoryEvent(WF, 3, ev.TaskStarted(WF, "n0", None, 1, 0, "w"))))
    stamps.see_event(seen(180, ev.HistoryEvent(WF, 6, ev.TaskStarted(WF, "n1", None, 1, 0, "w"))))
    return Chains([WF], 2, stamps)


def test_a_hop_is_its_coordinator_side_plus_its_worker_side() -> None:
    found = samples(two_step_chain())
    assert found == {"hop": [25], "dispatch": [10], "start": [15], "turnaround": [4, 5]}
    assert found["hop"][0] == found["dispatch"][0] + found["start"][0]


def test_shares_rank_the_workers_and_count_the_idle_ones() -> None:
    assert _shares(4, Counter({"w-a": 30, "w-b": 50, "w-c": 20})) == {
        "share_4w_1": 50.0, "share_4w_2": 30.0, "share_4w_3": 20.0, "share_4w_4": 0.0}


def test_more_workers_than_the_pool_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="3 worker ids in the reports of a pool of 2"):
        _shares(2, Counter({"a": 1, "b": 1, "c": 1}))
