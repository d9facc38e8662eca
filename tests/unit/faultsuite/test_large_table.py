"""The large-table scenario's pure parts (``faultsuite.large_table``, its plan in
``faultsuite.suite``, the supervisor's ``delete_tree``): recovery times read off the
events' Kafka timestamps, the outcomes the filled workflows must reach, the kills the
plan arms, the table store passed on, and a lost local store (no broker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from faultsuite.large_table import (
    FINISHED_END,
    KINDS,
    SIGNAL,
    SIGNAL_FIELDS,
    STORE_ENV,
    WAITING_END,
    LargeTable,
    TableRun,
    expected,
    store_env,
)
from faultsuite.recovery import GroupWatch, recoveries, recovery_times
from faultsuite.suite import FULL, LARGE_TABLE, QUICK, large_table_plan
from faultsuite.supervisor import delete_tree
from headwater.core import events as ev
from load.kafka_io import Seen


def test_a_recovery_runs_from_the_death_to_the_first_record_after_it() -> None:
    stamps = [900, 1000, 4500, 4700, 9000, 12_250]
    assert recovery_times([1000, 8000], stamps) == [3.5, 1.0]


def test_no_record_after_a_death_is_no_recovery() -> None:
    assert recovery_times([5000], [100, 5000]) == [None]
    assert recovery_times([], [1, 2]) == []


def test_the_group_formed_again_and_the_first_record_each_count_from_the_death() -> None:
    found = recoveries([1000, 12_000], [11_000, 18_500], [900, 11_400, 18_700])
    assert found == [{"group_s": 10.0, "first_record_s": 10.4},
                     {"group_s": 6.5, "first_record_s": 6.7}]
    assert recoveries([5000], [], []) == [{"group_s": None, "first_record_s": None}]


def test_a_group_forms_when_seen_stable_with_other_members() -> None:
    watch = GroupWatch("b", "g")
    watch.see("Stable", ["m1"], 100)  # the first look: the group as it was
    watch.see("Stable", ["m1"], 200)  # the dead member is still counted: nothing new
    watch.see("PreparingRebalance", ["m1", "m2"], 300)
    watch.see("CompletingRebalance", ["m2"], 400)
    watch.see("Stable", ["m2"], 500)
    watch.see("Stable", ["m2"], 600)
    watch.see("Empty", [], 700)
    watch.see("Stable", ["m3"], 800)
    assert watch.formed_ms == [500, 800]


def test_finished_workflows_end_skipped_and_waiting_ones_with_the_signal() -> None:
    want = expected(["d1", "d2"], ["w1"])
    assert want == {"d1": FINISHED_END, "d2": FINISHED_END, "w1": WAITING_END}
    assert WAITING_END.output == {"w": SIGNAL_FIELDS} and WAITING_END.status == "succeeded"
    waits = [n for n in KINDS.waiting_spec["nodes"] if n.get("kind") == "wait"]
    assert [n["signal"] for n in waits] == [SIGNAL]


def test_the_plan_kills_from_outside_first_then_at_fault_points_in_turn() -> None:
    plan = large_table_plan(LargeTable(finished=10, waiting=2), kills=3)
    assert plan.name == LARGE_TABLE and plan.faults == ""
    assert plan.schedule == {"coordinator": ["coordinator.after_intent=12",
                                             "coordinator.after_publish=12"]}
    assert plan.expect == ("external SIGKILL", "fault coordinator.after_intent",
                           "fault coordinator.after_publish")
    alone = large_table_plan(LargeTable(), kills=0)
    assert alone.schedule == {"coordinator": []} and alone.expect == ("external SIGKILL",)


def test_both_suites_run_the_large_table_the_full_one_larger() -> None:
    for suite in (QUICK, FULL):
        assert [p.name for p in suite.plans()].count(LARGE_TABLE) == 1
    assert FULL.table.finished == 5000 and FULL.table.waiting == 200
    assert QUICK.table.finished < FULL.table.finished


def test_the_table_store_is_passed_on_only_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STORE_ENV, raising=False)
    assert store_env() == {}
    monkeypatch.setenv(STORE_ENV, "rocksdb://")
    assert store_env() == {STORE_ENV: "rocksdb://"}


def test_a_waiting_workflow_is_unfinished_until_its_terminal_event() -> None:
    table = TableRun(LargeTable(), ["d1"], ["w1", "w2"])
    table.on_event(Seen(1, 0, ev.HistoryEvent("w1", 3, ev.WorkflowSucceeded("w1", 1, {}))))
    table.on_event(Seen(2, 0, ev.HistoryEvent("d1", 3, ev.WorkflowSucceeded("d1", 2, {}))))
    assert table.unfinished() == {"w2"}


def test_a_lost_store_is_deleted_whole_and_its_size_told(tmp_path: Path) -> None:
    store = tmp_path / "coordinator"
    (store / "tables" / "x").mkdir(parents=True)
    (store / "tables" / "x" / "000001.sst").write_bytes(b"a" * 100)
    (store / "LOCK").write_bytes(b"bb")
    assert delete_tree(store) == 102
    assert not store.exists()
    assert delete_tree(store) == 0
