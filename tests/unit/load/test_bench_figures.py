"""The benchmarks' pure arithmetic: a chain's hops split at the dispatch record, a pool's
shares of the attempts, B4's timeouts, B9's restart times, a process's
RSS (no broker: records are built by hand)."""

from __future__ import annotations

from collections import Counter

import pytest

from headwater.core import events as ev
from load import b4_width
from load.b7_recovery import Progress
from load.b8_workers import _shares
from load.b9_table import Sizes, metrics, restart_figures
from load.chains import Chains, Stamps, samples
from load.deploy import vm_rss_kib
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
    assert found == {"hop": [25], "dispatch": [10], "start": [15], "turnaround": [4, 5],
                     "continued": []}
    assert found["hop"][0] == found["dispatch"][0] + found["start"][0]


def test_shares_rank_the_workers_and_count_the_idle_ones() -> None:
    assert _shares(4, Counter({"w-a": 30, "w-b": 50, "w-c": 20})) == {
        "share_4w_1": 50.0, "share_4w_2": 30.0, "share_4w_3": 20.0, "share_4w_4": 0.0}


def test_more_workers_than_the_pool_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="3 worker ids in the reports of a pool of 2"):
        _shares(2, Counter({"a": 1, "b": 1, "c": 1}))


def history(ms: int, wid: str, body: ev.Body) -> Seen:
    return seen(ms, ev.HistoryEvent(wid, 1, body))


def test_restart_times_run_from_the_kill() -> None:
    progress = Progress({"p1", "p2"})
    progress.see(history(900, "x", ev.WorkflowSucceeded("x", 900, None)))  # before the kill
    progress.killed_ms = 1000
    progress.see(history(3500, "p1", ev.WorkflowSucceeded("p1", 3500, None)))
    progress.see(history(3700, "p2", ev.WorkflowSucceeded("p2", 3700, None)))
    assert restart_figures(progress) == (2.5, 2.7)


def test_a_failed_probe_or_no_record_after_the_kill_is_an_error() -> None:
    progress = Progress({"p1"})
    progress.killed_ms = 1000
    with pytest.raises(RuntimeError, match="no history record after the kill"):
        restart_figures(progress)
    progress.see(history(1200, "p1", ev.WorkflowFailed("p1", 1200, "boom")))
    with pytest.raises(RuntimeError, match="1 probes did not succeed"):
        restart_figures(progress)


def test_b9_names_its_figures_by_size() -> None:
    keys = [m.key for m in metrics(Sizes(finished=(500, 2000), waiting=500))]
    assert keys[0] == "fill_per_s" and len(keys) == 1 + 2 * 6 + 2 + 3
    assert {"restart_first_record_s_500", "restart_all_probes_s_2000", "rss_before_mb_500",
            "rss_after_mb_2000", "changelog_records_500", "changelog_bytes_2000"} <= set(keys)
    assert keys[-5:] == ["wiped_first_record_s_2000", "wiped_all_probes_s_2000",
                         "takeover_group_s_2000", "takeover_first_record_s_2000",
                         "takeover_all_partitions_s_2000"]  # once, at the largest size


def test_a_b4_map_may_take_longer_the_wider_it_is() -> None:
    sizes = b4_width.Sizes(widths=(100, 100_000))
    assert sizes.map_timeout_s(0) == sizes.timeout_s == 240
    assert sizes.map_timeout_s(100_000) == 240 + 100_000 / 200


def test_b4_reports_the_coordinators_rss_by_width_and_its_peak_against_idle() -> None:
    keys = [m.key for m in b4_width.metrics(b4_width.Sizes(widths=(100, 100_000)))]
    assert {"rss_peak_mb_100", "rss_peak_mb_100000", "rss_idle_mb"} <= set(keys)
    assert keys[-1] == "rss_peak_ratio"


def test_vm_rss_is_read_in_kib() -> None:
    status = "Name:\tpython\nVmPeak:\t  300000 kB\nVmRSS:\t   91234 kB\nThreads:\t4\n"
    assert vm_rss_kib(status) == 91234


@pytest.mark.parametrize("status", ["Name:\tkthreadd\nThreads:\t1\n", "VmRSS:\t12 MB\n"])
def test_a_status_without_a_vm_rss_in_kb_is_an_error(status: str) -> None:
    with pytest.raises(ValueError, match="VmRSS"):
        vm_rss_kib(status)
