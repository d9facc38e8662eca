"""The ``schedule`` node kind in a spec: its fields, their defaults, every fault named,
and the fire times croniter gives in a time zone."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.core.kinds.schedule.cron import (
    ScheduleSpec,
    due_fire_times,
    instant_text,
    next_fire_ms,
    prev_fire_ms,
)
from headwater.core.spec import NodeKind, parse_spec
from headwater.errors import SpecError

KID = {"name": "kid", "nodes": [{"id": "x", "task": "t.x"}]}


def doc(*extra_nodes: dict[str, Any], **fields: Any) -> dict[str, Any]:
    node = {"id": "fire", "kind": "schedule", "cron": "*/5 * * * *", "workflow": KID,
            **fields}
    return {"name": "schedule:nightly", "nodes": [node, *extra_nodes]}


def faults(d: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as e:
        parse_spec(d)
    return e.value.faults


def test_a_schedule_node_with_its_defaults() -> None:
    node = parse_spec(doc(input={"q": 1})).nodes[0]
    assert node.kind is NodeKind.SCHEDULE and node.task == ""
    assert node.schedule == ScheduleSpec("*/5 * * * *")
    assert node.child is not None and node.child.workflow == KID
    assert node.retry.max_attempts == 1 and node.input == {"q": 1}


def test_every_field_given() -> None:
    node = parse_spec(doc(cron="0 9 * * 1-5", timezone="Europe/Paris", overlap="allow",
                          catchup="all", catchup_max=3, misfire_grace=0.5,
                          start_at="2026-01-01T00:00:00Z", definition="billing",
                          definition_version=3)).nodes[0]
    assert node.schedule == ScheduleSpec("0 9 * * 1-5", "Europe/Paris", "allow", "all", 3,
                                         0.5, 1_767_225_600_000)
    assert node.child is not None and (node.child.definition,
                                       node.child.definition_version) == ("billing", 3)


@pytest.mark.parametrize(("fields", "fault"), [
    ({"cron": "not a cron"}, "cron: required, a cron expression"),
    ({"cron": "* * *"}, "cron: required"),
    ({"cron": "* * * * * * * *"}, "cron: required"),
    ({"cron": "H * * * *"}, "cron: required"),
    ({"cron": None}, "cron: required"),
    ({"cron": "0 0 30 2 *"}, "never fires"),
    ({"timezone": "Mars/Olympus"}, "timezone: 'Mars/Olympus' is not an IANA time zone"),
    ({"timezone": 5}, "is not an IANA time zone"),
    ({"overlap": "queue"}, "overlap must be one of skip, allow, cancel_previous"),
    ({"catchup": "some"}, "catchup must be one of none, latest, all"),
    ({"catchup_max": 0}, "catchup_max must be an integer from 1 to 1000"),
    ({"catchup_max": True}, "catchup_max must be an integer"),
    ({"misfire_grace": -1}, "misfire_grace must be a number of seconds >= 0"),
    ({"start_at": "tomorrow"}, "start_at must be an RFC 3339 date-time"),
    ({"workflow": None}, "needs 'workflow:'"),
    ({"queue": "io"}, "'queue' does not apply to a schedule node"),
    ({"retry": {"max_attempts": 3}}, "'retry' does not apply to a schedule node"),
    ({"when": "${input.x} == 1"}, "a schedule node takes no 'when'"),
])
def test_each_fault_is_named(fields: dict[str, Any], fault: str) -> None:
    got = faults(doc(**fields))
    assert any(fault in f and f.startswith("node 'fire'") for f in got), got


def test_a_schedule_spec_has_exactly_one_node() -> None:
    got = faults(doc({"id": "other", "task": "t.o"}))
    assert "node 'fire': a schedule's spec has exactly one node, the schedule (got 2)" in got


def test_a_schedule_node_has_no_needs() -> None:
    got = faults(doc({"id": "a", "task": "t.a"}, needs=["a"]))
    assert "node 'fire': a schedule node takes no 'needs'" in got


def test_several_faults_at_once() -> None:
    assert len(faults(doc(cron="x", timezone="Nowhere", overlap="q"))) == 3


def test_the_inline_workflow_is_validated_with_it() -> None:
    got = faults(doc(workflow={"name": "kid", "nodes": []}))
    assert any("workflow: nodes: required" in f for f in got), got


def test_fire_times_with_seconds_last() -> None:
    every_2s = ScheduleSpec("* * * * * */2")
    assert next_fire_ms(every_2s, 1_000) == 2_000
    assert next_fire_ms(every_2s, 2_000) == 4_000  # strictly after
    assert prev_fire_ms(every_2s, 2_000) == 0
    assert due_fire_times(every_2s, 2_000, 7_999) == [2_000, 4_000, 6_000]
    assert due_fire_times(every_2s, 2_000, 1_999) == []


def test_due_fire_times_keep_the_latest_catchup_max_plus_one() -> None:
    every_2s = ScheduleSpec("* * * * * */2", catchup_max=2)
    assert due_fire_times(every_2s, 2_000, 1_000_000) == [996_000, 998_000, 1_000_000]


def test_a_daily_time_follows_the_zones_summer_time() -> None:
    paris = ScheduleSpec("0 9 * * *", timezone="Europe/Paris")
    winter = next_fire_ms(paris, 1_767_225_600_000)  # 2026-01-01T00:00Z
    summer = next_fire_ms(paris, 1_782_864_000_000)  # 2026-07-01T00:00Z
    assert winter is not None and summer is not None
    assert instant_text(winter) == "2026-01-01T08:00:00.000Z"  # 09:00 CET
    assert instant_text(summer) == "2026-07-01T07:00:00.000Z"  # 09:00 CEST
