"""``services/webhooks/matching.py``: which events a webhook takes (its events,
``run.ended`` for the three ends, after its creation, its tenant's runs, its filter), the
delivery id (the same for the same event read again, another for another webhook or
event), and the body posted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from headwater import WorkflowContext, workflow
from headwater.core import events as ev
from headwater.testing import Environment
from headwater.webhooks import WebhookStored
from services.webhooks.matching import (
    CANCELLED,
    FAILED,
    SUCCEEDED,
    WAITING,
    RunFacts,
    code_nodes,
    decide,
    delivery_id,
    event_name,
    named,
    passes,
    takes,
)

AT = 1_780_000_000_000
RUN = RunFacts("wf-1", "acme", "refund", "refund-def")


def hook(**changes: Any) -> WebhookStored:
    base: dict[str, Any] = dict(
        name="h", tenant="acme", url="http://127.0.0.1/h", events=("run.ended",), filter={},
        secret="s" * 16, max_attempts=3, backoff_ms=100, backoff_max_ms=1000, deleted=False,
        created_at_ms=AT - 1000, at_ms=AT - 1000)
    return WebhookStored(**{**base, **changes})


def history(body: Any, seq: int = 5) -> ev.HistoryEvent:
    return ev.HistoryEvent("wf-1", seq, body)


ENDED = history(ev.WorkflowFailed("wf-1", AT, "boom"))
WAIT = history(ev.WaitStarted("wf-1", "approve", None, "go", AT, AT + 60_000), 3)


@pytest.mark.parametrize(("body", "name"), [
    (ev.WorkflowSucceeded("wf-1", AT, {"x": 1}), SUCCEEDED),
    (ev.WorkflowFailed("wf-1", AT, "boom"), FAILED),
    (ev.WorkflowCancelled("wf-1", AT, "asked"), CANCELLED),
    (ev.WaitStarted("wf-1", "n", 2, "go", AT), WAITING),
    (ev.WorkflowAccepted("wf-1", AT, {"name": "x", "nodes": []}, None), None),
    (ev.TaskFailed("wf-1", "n", None, 1, "e", AT), None),
])
def test_the_events_a_webhook_can_take(body: Any, name: str | None) -> None:
    assert event_name(history(body)) == name


def test_run_ended_stands_for_the_three_ends() -> None:
    assert named(["run.ended"]) == {SUCCEEDED, FAILED, CANCELLED}
    assert named(["run.failed", "run.waiting"]) == {FAILED, WAITING}


def test_the_filter_takes_runs_by_name_and_definition() -> None:
    assert passes({}, RUN) and passes({"names": [], "definitions": []}, RUN)
    assert passes({"names": ["refund", "other"]}, RUN)
    assert not passes({"names": ["other"]}, RUN)
    assert passes({"definitions": ["refund-def"]}, RUN)
    assert not passes({"names": ["refund"], "definitions": ["other"]}, RUN)
    assert not passes({"definitions": ["refund-def"]}, RunFacts("w", None, "refund", None))



def test_the_filter_takes_runs_that_carry_every_label_it_names() -> None:
    labelled = RunFacts("wf-2", "acme", "refund", None, labels={"team": "search",
                                                                 "env": "prod"})
    assert passes({"labels": {}}, labelled) and passes({"labels": {}}, RUN)
    assert passes({"labels": {"team": "search"}}, labelled)
    assert passes({"labels": {"team": "search", "env": "prod"}}, labelled)
    assert not passes({"labels": {"team": "search", "env": "dev"}}, labelled)
    assert not passes({"labels": {"team": "search"}}, RUN)  # a run without labels
    assert not passes({"names": ["other"], "labels": {"team": "search"}}, labelled)


def test_a_webhook_takes_its_tenants_runs_after_its_creation() -> None:
    assert takes(hook(), FAILED, AT, RUN)
    assert takes(hook(tenant=None), FAILED, AT, RUN)  # every tenant's
    assert not takes(hook(tenant="globex"), FAILED, AT, RUN)
    assert not takes(hook(tenant="acme"), FAILED, AT, RunFacts("w", None, "refund", None))
    assert not takes(hook(created_at_ms=AT + 1), FAILED, AT, RUN)
    assert not takes(hook(deleted=True), FAILED, AT, RUN)
    assert not takes(hook(events=("run.succeeded",)), FAILED, AT, RUN)
    assert not takes(hook(), WAITING, AT, RUN)


def test_the_delivery_id_is_the_same_for_the_same_event_and_webhook_only() -> None:
    one = delivery_id(hook(), "wf-1", 5)
    assert one == delivery_id(hook(url="http://elsewhere", at_ms=AT), "wf-1", 5)
    assert one.startswith("d_") and len(one) == 34
    others = {delivery_id(hook(name="h2"), "wf-1", 5), delivery_id(hook(), "wf-2", 5),
              delivery_id(hook(), "wf-1", 6), delivery_id(hook(created_at_ms=AT), "wf-1", 5)}
    assert one not in others and len(others) == 4


def test_decide_makes_one_delivery_per_webhook_that_takes_the_event() -> None:
    hooks = [hook(name="a"), hook(name="b", events=("run.succeeded",)),
             hook(name="c", filter={"names": ["refund"]}), hook(name="d", tenant="globex")]
    decided = decide(hooks, ENDED, RUN)
    assert [d.webhook for d in decided] == ["a", "c"]
    first = decided[0]
    assert (first.workflow_id, first.seq, first.event) == ("wf-1", 5, FAILED)
    doc = json.loads(first.body)
    assert doc == {
        "id": first.delivery_id, "webhook": "a", "event": "run.failed",
        "at": "2026-05-28T20:26:40+00:00", "error": "boom",
        "run": {"workflow_id": "wf-1", "name": "refund", "definition": "refund-def",
                "tenant": "acme", "seq": 5, "link": "/v1/workflows/wf-1"}}
    assert decide(hooks, ENDED, RUN) == decided  # the same event read again: the same


def test_a_waiting_delivery_names_the_wait() -> None:
    [waiting] = decide([hook(events=("run.waiting",))], WAIT, RUN)
    assert json.loads(waiting.body)["wait"] == {
        "node": "approve", "index": None, "signal": "go",
        "timeout_at": "2026-05-28T20:27:40+00:00"}
    assert decide([hook()], WAIT, RUN) == []


@workflow(name="wh.approval")
async def approval(wf: WorkflowContext, order: int) -> Any:
    """Waits for ``approval`` (60 s), then for ``shipped`` (for ever)."""
    first = await wf.signal("approval", timeout=60)
    return [first, await wf.signal("shipped")]


async def test_a_code_workflows_signal_waits_are_deliveries_of_run_waiting() -> None:
    env = Environment()
    run = await env.start(approval, {"order": 7}, id="wf-code")
    await env.signal(run, "approval", {"ok": True})
    await env.run_until_idle(timers=False)
    history = env.history(run)
    accepted = history[0].body
    assert isinstance(accepted, ev.WorkflowAccepted)
    facts = RunFacts(run, None, str(accepted.spec["name"]), None, code_nodes(accepted.spec))
    assert facts.code_nodes == {"main"}
    waiting = hook(tenant=None, events=("run.waiting",))
    decided = [d for e in history for d in decide([waiting], e, facts)]
    bodies = [json.loads(d.body) for d in decided]
    assert [b["wait"]["signal"] for b in bodies] == ["approval", "shipped"]
    assert [b["wait"]["node"] for b in bodies] == ["main", "main"]
    first, second = (b["wait"] for b in bodies)
    assert first["index"] % 2 == 1 and second["index"] > first["index"]
    assert first["timeout_at"] is not None and second["timeout_at"] is None
    assert len({d.delivery_id for d in decided}) == 2
    ended = hook(tenant=None)  # run.ended only: no wait is delivered
    assert [d for e in history for d in decide([ended], e, facts)] == []
    not_code = RunFacts(run, None, "x", None)  # the same events of a node not of code
    assert [d for e in history for d in decide([waiting], e, not_code)] == []
