"""B2's figures by coordinator count: the keys of older results kept, four coordinators
in the full plan only, a phase's partitions and CPU time turned into figures (no broker)."""

from __future__ import annotations

import pytest
from aiokafka.protocol.group import MemberAssignment

from load import b2_throughput, plan
from load.b2_throughput import Run, Sizes, metrics, phase_values
from load.kafka_io import partitions_held

OLD_KEYS = ["tasks_per_s_1_coordinator", "tasks_per_s_2_coordinators", "scaling_2_vs_1",
            "history_records_per_task"]


def keys(sizes: Sizes) -> list[str]:
    return [m.key for m in metrics(sizes)]


def test_the_full_plan_measures_one_two_and_four_coordinators() -> None:
    full = keys(plan.FULL["B2"])
    assert set(OLD_KEYS) <= set(full)
    assert {"tasks_per_s_4_coordinators", "scaling_4_vs_1", "tasks_per_cpu_s_4c",
            "partitions_max_4c", "cpu_s_coordinators_4c"} <= set(full)


def test_the_quick_plan_keeps_one_and_two_coordinators() -> None:
    assert plan.QUICK["B2"].coordinators == (1, 2)
    quick = keys(plan.QUICK["B2"])
    assert set(OLD_KEYS) <= set(quick)
    assert not [k for k in quick if "4" in k]


@pytest.mark.parametrize("coordinators", [(), (2, 4), (1, 4, 2), (1, 1, 2)])
def test_coordinator_counts_start_at_one_and_increase(coordinators: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="must start at 1 and increase"):
        b2_throughput.run(Sizes(workflows=1, coordinators=coordinators))


def test_a_phase_gives_tasks_per_cpu_second_and_its_partition_spread() -> None:
    measured = Run(rate=500.0, per_task=4.0, tasks=1200,
                   cpu_s={"coordinators": 4.0, "workers": 6.0, "others": 2.0})
    values = phase_values(2, measured, [5, 3])
    assert values == {
        "tasks_per_s_2_coordinators": 500.0, "partitions_max_2c": 5, "partitions_min_2c": 3,
        "cpu_s_coordinators_2c": 4.0, "cpu_s_workers_2c": 6.0, "cpu_s_others_2c": 2.0,
        "tasks_per_cpu_s_2c": 100.0, "tasks_per_coordinator_cpu_s_2c": 300.0}
    assert set(values) | {"tasks_per_s_2_coordinators"} == {
        m.key for m in metrics(Sizes(workflows=1, coordinators=(1, 2)))
        if m.key.endswith("_2c") or m.key == "tasks_per_s_2_coordinators"}


def test_a_phase_with_a_member_missing_or_no_cpu_time_is_an_error() -> None:
    measured = Run(rate=1.0, per_task=4.0, tasks=3, cpu_s={"coordinators": 1.0})
    with pytest.raises(RuntimeError, match="had 1 members, not 2"):
        phase_values(2, measured, [8])
    idle = Run(rate=1.0, per_task=4.0, tasks=3, cpu_s={"coordinators": 0.0, "workers": 1.0})
    with pytest.raises(RuntimeError, match="no CPU time"):
        phase_values(1, idle, [8])


def test_partitions_held_counts_one_topics_partitions_per_member() -> None:
    """Faust's assignor writes the consumer protocol's assignment: the input topic's
    partitions beside others (changelog standbys, other inputs) not counted."""
    a = MemberAssignment(0, [("p-submissions", [0, 2, 4]), ("p-changelog", [1])], b"{}")
    b = MemberAssignment(0, [("p-submissions", [1, 3, 5, 6, 7])], b"")
    c = MemberAssignment(0, [("p-reports", [0])], b"")
    raw = [x.encode() for x in (a, b, c)]
    assert partitions_held(raw, "p-submissions") == [5, 3, 0]
    with pytest.raises(ValueError, match="not a consumer group member assignment"):
        partitions_held([b"\x00"], "p-submissions")
