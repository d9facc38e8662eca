"""The benchmarks' chain in code (B2c, B3c): the workflow runs the spec chain's noop tasks
one after another, its noop tasks are told apart from its activations, and its hops are
split at the activation between two tasks (no broker: records are built by hand, the
workflow runs in ``headwater.testing.Environment``)."""

from __future__ import annotations

from headwater.core import events as ev
from headwater.testing import Environment
from load import plan, workloads
from load.b2_throughput import _Count
from load.chains import CODE_LEGS, Chains, Stamps, samples
from load.kafka_io import Seen

WF = "wf-1"


def seen(ms: int, value: object) -> Seen:
    return Seen(ms, 0, value)


async def test_the_code_chain_runs_its_noop_tasks_one_after_another() -> None:
    env = Environment()
    run = await env.start(workloads.code_chain(), workloads.code_input(3))
    assert await env.result(run) is None
    ran = [(e.body.task, e.body.index) for e in env.history(run)
           if isinstance(e.body, ev.TaskDispatched)]
    assert ran == [("bench.chain", 0), ("bench.noop", 1), ("bench.chain", 2), ("bench.noop", 3),
                   ("bench.chain", 4), ("bench.noop", 5), ("bench.chain", 6)]
    assert [i for _, i in ran if workloads.is_step(i)] == [1, 3, 5]
    assert {e.body.queue for e in env.history(run) if isinstance(e.body, ev.TaskDispatched)} \
        == {"cpu"}


def test_throughput_counts_the_noop_tasks_not_the_activations() -> None:
    count = _Count({WF}, [])
    for ms, index in ((10, None), (20, 0), (30, 1), (40, 2), (50, 3)):
        count.see(seen(ms, ev.HistoryEvent(WF, ms, ev.TaskSucceeded(WF, "main", index, 1, ms))))
    count.see(seen(60, ev.HistoryEvent("other", 1, ev.TaskSucceeded("other", "n0", None, 1, 60))))
    count.see(seen(70, ev.HistoryEvent(WF, 70, ev.WorkflowSucceeded(WF, 70, None))))
    assert count.succeeded_at == [10, 30, 50]
    assert (count.records, count.finished, count.failed) == (6, 1, 0)


def two_step_code_chain() -> Chains:
    """Step 0 (index 1) → activation 1 (index 2), sent to a worker → step 1 (index 3)."""
    stamps = Stamps({WF})
    stamps.see_event(seen(114, ev.HistoryEvent(WF, 9, ev.TaskDispatched(
        WF, "main", 2, 1, "bench.chain", "cpu", {"activation": 1}, 0))))
    stamps.see_report(seen(100, ev.TaskStarted(WF, "main", 1, 1, 0, "w")))
    stamps.see_report(seen(110, ev.TaskSucceeded(WF, "main", 1, 1, 0, None)))
    stamps.see_dispatch(seen(115, ev.TaskDispatched(WF, "main", 2, 1, "bench.chain", "cpu",
                                                    None, 0)))
    stamps.see_report(seen(120, ev.TaskStarted(WF, "main", 2, 1, 0, "w")))
    stamps.see_report(seen(128, ev.TaskSucceeded(WF, "main", 2, 1, 0, {"steps": []})))
    stamps.see_dispatch(seen(140, ev.TaskDispatched(WF, "main", 3, 1, "bench.noop", "cpu",
                                                    None, 0)))
    stamps.see_report(seen(145, ev.TaskStarted(WF, "main", 3, 1, 0, "w")))
    return Chains([WF], 2, stamps, code=True)


def test_a_hop_in_code_is_split_at_its_activation() -> None:
    chains = two_step_code_chain()
    assert chains.stamps.sent == {(WF, "main", 2)}
    assert list(chains.hops()) == [((WF, "main", 1), (WF, "main", 3))]
    found = samples(chains)
    assert (found["hop"], found["dispatch"], found["start"]) == ([35], [30], [5])
    assert {leg: found[leg] for leg in CODE_LEGS} == {
        "to_activation": [5], "activation_start": [5], "activation": [8], "decided": [12]}
    assert sum(found[leg][0] for leg in CODE_LEGS) == found["dispatch"][0]
    assert found["continued"] == []


def test_a_continued_hop_has_no_activation_legs() -> None:
    """Step 0's report carried activation 1's decision: its history records the
    activation's dispatch as continued, and no record of it goes to a worker."""
    stamps = Stamps({WF})
    stamps.see_event(seen(112, ev.HistoryEvent(WF, 9, ev.TaskDispatched(
        WF, "main", 2, 1, "bench.chain", "cpu", {"activation": 1, "continued": 0}, 0))))
    stamps.see_report(seen(110, ev.TaskSucceeded(WF, "main", 1, 1, 0, None)))
    stamps.see_dispatch(seen(118, ev.TaskDispatched(WF, "main", 3, 1, "bench.noop", "cpu",
                                                    None, 0)))
    stamps.see_report(seen(121, ev.TaskStarted(WF, "main", 3, 1, 0, "w")))
    found = samples(Chains([WF], 2, stamps, code=True))
    assert stamps.sent == set()
    assert (found["hop"], found["dispatch"], found["start"], found["continued"]) == (
        [11], [8], [3], [1])
    assert all(leg not in found for leg in CODE_LEGS)


def test_a_spec_chain_has_no_activations() -> None:
    chains = Chains([WF], 3, Stamps({WF}))
    assert list(chains.hops()) == [((WF, "n0", None), (WF, "n1", None)),
                                   ((WF, "n1", None), (WF, "n2", None))]


def test_a_benchmark_is_chosen_by_its_name_in_any_case() -> None:
    assert [p.name for p in plan.plan(quick=True, only={"B2C", "b3c"})] == ["B1", "B2c", "B3c"]
