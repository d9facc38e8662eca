"""Records of every type for the codec's tests, their fields filled in unusual ways
(non-ASCII text, nested JSON, an index set and unset, the largest numbers), and the Avro
schema files as documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from headwater.announcement import AnnouncedWorkflow, WorkerAnnounced
from headwater.core import events as ev
from headwater.core.definitions import DefinitionHead, DefinitionStored
from headwater.log_lines import LogLine, TaskLogLines
from headwater.operations import OperationRecorded
from headwater.trigger_records import TriggerStored
from headwater.webhooks import WebhookStored

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas" / "avro"
WF = "wf-ü-漢字-1"
AT = 1_722_000_000_123
SPEC = {"name": "ß", "nodes": [{"id": "a", "task": "t", "input": {"x": ["${input.q}", 1.5]}}]}
NESTED: dict[str, Any] = {
    "q": "ünïcode ✓", "n": [1, -2, 3.25, None, True, {"deep": [[], {}]}], "e": ""}


def _with_index(cls: type[Any], **fields: Any) -> list[Any]:
    return [cls(**fields, index=None), cls(**fields, index=7)]


def body_samples() -> list[Any]:
    base = {"workflow_id": WF, "node": "nöde", "attempt": 2, "at_ms": AT}
    return [
        ev.WorkflowAccepted(WF, AT, SPEC, NESTED, "tënant"),
        ev.WorkflowAccepted(WF, AT, SPEC, None, None),
        *_with_index(ev.TaskDispatched, **base, task="pkg.task", queue="gpu", input=NESTED,
                     timeout_s=12.5, heartbeat_timeout_s=3.0, checkpoint={"done": [1, 2]}),
        ev.TaskDispatched(WF, "n", None, 1, "t", "cpu", [], AT, None),
        *_with_index(ev.TaskStarted, **base, worker="host-1/pid-2"),
        *_with_index(ev.TaskProgressed, **base, fraction=0.3, message="30 % ⏳"),
        *_with_index(ev.TaskHeartbeated, **base),
        *_with_index(ev.TaskCheckpointed, **base, checkpoint={"cursor": NESTED}),
        ev.TaskCheckpointed(WF, "n", None, 1, AT, None),
        *_with_index(ev.TaskOutputStreamed, **base, chunk_seq=41, chunk="tök"),
        ev.TaskOutputStreamed(WF, "n", 0, 1, AT, 0, {"delta": [NESTED]}),
        *_with_index(ev.TaskCancelled, **base, reason="workflow cancelled ✋"),
        *_with_index(ev.ReportDiscarded, **base, report="TaskSucceeded",
                     reason="attempt 2 had already ended: timed out"),
        *_with_index(ev.TaskSucceeded, **base, output={"result": NESTED, "list": [SPEC]}),
        ev.TaskSucceeded(WF, "n", 0, 1, AT, None),
        *_with_index(ev.TaskFailed, **base, error="ValueError: bad ☹", error_type="ValueError",
                     retryable=False),
        ev.TaskFailed(WF, "n", 3, 2, AT, "boom ☹", "KeyError", True,
                      'Traceback (most recent call last):\n  File "t.py", line 3, in f\n'
                      "    raise KeyError('boom ☹')\nKeyError: 'boom ☹'\n"),
        *_with_index(ev.TimerScheduled, workflow_id=WF, timer_id="retry:nöde[7]:3",
                     fire_at_ms=AT + 2**40, node="nöde", attempt=3, at_ms=AT),
        ev.TimerFired(WF, "retry:n:2", AT),
        ev.MapExpanded(WF, "m", 10_000, AT),
        *kind_body_samples(),
        ev.NodeFinished(WF, "nöde", "failed", AT, "needs a, which failed"),
        ev.WorkflowSucceeded(WF, AT, {"out": NESTED}),
        ev.WorkflowSucceeded(WF, AT, None),
        ev.WorkflowFailed(WF, AT, "invalid spec: cycle: a -> b -> a"),
        ev.WorkflowCancelled(WF, AT, "user ✋"),
        ev.WorkflowPaused(WF, AT, "req-1", "alice ⏸", "deploy window"),
        ev.WorkflowPaused(WF, AT),
        ev.WorkflowResumed(WF, AT, "req-2", "alice", held=3, due=1),
        *_with_index(ev.DispatchDeferred, **base),
        *_with_index(ev.DispatchRecalled, **base),
        ev.TimerDeferred(WF, "sleep:nap", AT - 5, AT),
    ]


CACHE = "cache::" + "0a" * 20
SOURCE = {"workflow_id": "wf-sóurce", "node": "embed", "index": None, "attempt": 1}


def kind_body_samples() -> list[Any]:
    """The history bodies of waits, signals, sleeps, conditions, children and loops."""
    return [
        ev.ParentLinked(WF, "pärent-1", "child", None, 3, AT),
        ev.ParentLinked(WF, "p", "kids", 12, 1, AT),
        ev.DeadlineSet(WF, AT + 2**40, AT),
        ev.CallerLinked(WF, "pärent-1", "fetch", None, 2, AT),
        ev.CallerLinked(WF, "p", "items", 2**31 - 1, 1, AT),
        ev.CallLinked(WF, f"{WF}:fetch:call.1", "fetch", None, 1, AT, "tënant"),
        ev.CallLinked(WF, "c", "items", 4, 2**31 - 1, AT),
        *_with_index(ev.WaitStarted, workflow_id=WF, node="approve", signal="approvål",
                     at_ms=AT, timeout_at_ms=AT + 2**40),
        ev.WaitStarted(WF, "w", None, "s", AT),
        ev.SignalSent(WF, "approval", AT, None, "sig-ü-1", {"approved": True, "n": NESTED}),
        ev.SignalSent(WF, "approval", AT, 2**31 - 1),
        *_with_index(ev.SignalConsumed, workflow_id=WF, node="approve", name="approval",
                     signal_id="sig-1", at_ms=AT, fields={"note": "ok ✓", "deep": [NESTED]}),
        ev.SignalConsumed(WF, "w", None, "s", "", AT),
        *_with_index(ev.SignalDiscarded, workflow_id=WF, name="approval", signal_id="sig-2",
                     at_ms=AT, reason="wait approve had ended: timed out"),
        ev.SignalDiscarded(WF, "s", None, "", AT),
        ev.SleepStarted(WF, "nap", AT, AT + 3_000),
        ev.ConditionEvaluated(WF, "refund", AT, False),
        ev.ConditionEvaluated(WF, "refund", AT),
        ev.LoopStepDecided(WF, "agent", 0, AT, tool="search", input={"q": NESTED}, spend=12.5),
        ev.LoopStepDecided(WF, "agent", 4, AT, finish=True, output={"answer": [SPEC]}),
        ev.LoopStepDecided(WF, "agent", 999, AT),
        ev.ScheduleArmed(WF, "fire", AT, AT + 2_000),
        ev.ScheduleFired(WF, "fire", AT, AT - 5, "started", f"{WF}:fire.0:1"),
        ev.ScheduleFired(WF, "fire", AT, AT - 90_000, "skipped_missed"),
        ev.SchedulePaused(WF, "fire", AT, "sig-1"),
        ev.ScheduleResumed(WF, "fire", AT),
        ev.WorkflowRestarted(WF, AT, 2, 3, "b attempt 1 was lost", {"a": 1, "m": 2}),
        ev.WorkflowRestarted(WF, AT, 100, 0),
        ev.NodeReused(WF, "nöde", {"kept": [1, NESTED]}, AT),
        ev.NodeReused(WF, "a", None, AT),
        ev.TaskReused(WF, "m", 41, 3, {"r": "é"}, AT),
        *_with_index(ev.TaskHeld, workflow_id=WF, node="cäll", attempt=2,
                     limiter="limit::concurrency:acme", kind="concurrency", key="acmé",
                     limit=2, window_ms=0, units=1, at_ms=AT),
        *_with_index(ev.PermitGranted, workflow_id=WF, node="call", attempt=1,
                     limiter="limit::rate:openai", at_ms=AT),
        *_with_index(ev.PermitsReturned, workflow_id=WF, node="call", attempt=2,
                     limiters=("limit::concurrency:acme", "limit::rate:openai"), at_ms=AT,
                     units=1234),
        ev.PermitsReturned(WF, "call", None, 1, (), AT),
        ev.PermitRequested("limit::rate:openai", f"{WF}/call[3]/1", "rate", "openai", 500,
                           60_000, 1200, AT),
        ev.PermitReleased("limit::rate:openai", f"{WF}/call/2", AT),
        ev.PermitReleased("limit::rate:openai", f"{WF}/call/2", AT, 480, 3, 2**40, 1200),
        ev.TaskSucceeded(WF, "call", 3, 1, AT, {"text": "é"}, None, 1234),
        ev.PermitIssued("limit::concurrency:acme", f"{WF}/call/2", 1, 2, 2, AT),
        ev.PermitRefused("limit::concurrency:acme", f"{WF}/call/3", 1, 10_000, AT),
        ev.PermitRefused("limit::rate:openai", f"{WF}/call[2]/1", 1200, 10_000, AT, 480,
                         10_000, 2**40),
        ev.LimitDefined("limit::rate:openai", "rate", "openai", 500, 60_000, AT, 3, 1, 2**40),
        ev.LimitDefined("limit::concurrency:acme", "concurrency", "acme", 0, 0, AT),
        *_with_index(ev.TaskLookedUp, workflow_id=WF, node="embéd", attempt=2, cache=CACHE,
                     task="rag.embed", key="dóc-1", ttl_ms=7 * 86_400_000, refresh=True,
                     at_ms=AT),
        *_with_index(ev.CacheAnswered, workflow_id=WF, node="embed", attempt=1, cache=CACHE,
                     hit=True, at_ms=AT, output={"v": [1, NESTED]}, source=SOURCE,
                     saved_ms=2**40, units=1234),
        ev.CacheAnswered(WF, "embed", None, 1, CACHE, False, AT),
        *_with_index(ev.TaskCached, workflow_id=WF, node="embed", attempt=3, cache=CACHE,
                     task="rag.embed", output=None, source=SOURCE, at_ms=AT),
        *_with_index(ev.CacheReturned, workflow_id=WF, node="embed", attempt=1, cache=CACHE,
                     at_ms=AT, stored=True, output={"é": 1}, saved_ms=300, units=40),
        ev.CacheReturned(WF, "embed", 4, 2, CACHE, AT),
        ev.CacheLookedUp(CACHE, f"{WF}/embed[3]/1", "rag.embed", "dóc", 1000, False, AT, 3),
        ev.CacheServed(CACHE, f"{WF}/embed/1", True, AT, [1, "é"], SOURCE, 300, 40),
        ev.CacheServed(CACHE, f"{WF}/embed/2", False, AT),
        ev.CacheServed(CACHE, f"{WF}/embed/3", False, AT, alone=True),
        ev.CacheReleased(CACHE, f"{WF}/embed/1", AT, True, {"x": None}, SOURCE, 300, None),
        ev.CacheReleased(CACHE, f"{WF}/embed/2", AT),
        ev.WorkflowAccepted(WF, AT, SPEC, {"q": 1}, "acme", rerun={
            "of": "wf-source", "reset": "b", "nodes": {"a": [1]}, "items": {"m": {"3": 2}}}),
    ]


def other_samples() -> list[Any]:
    """The records that are no workflow records: the definitions', the workers', the
    task logs' and the triggers'."""
    return [
        DefinitionStored("grëet", 1, SPEC, None, "d" * 64, AT),
        DefinitionStored("greet", 2**31 - 1, SPEC, {"type": "object", "properties": NESTED},
                         "e" * 64, 0),
        DefinitionHead("grëet", 3, False, AT),
        DefinitionHead("greet", 1, True, AT),
        WorkerAnnounced("host-1-42", "gpu", ("embed", "ränk"), 4, 2, "0.1.0", "höst", 42,
                        AT - 60_000, AT, 5000),
        WorkerAnnounced("w", "cpu", (), 1, 0, "unknown", "h", 2**31 - 1, 0, AT, 1, True),
        WorkerAnnounced("w2", "cpu", ("flöws.research",), 1, 0, "0.1.0", "h", 7, 0, AT, 1500,
                        False, (AnnouncedWorkflow("flöws.research", SPEC, {"type": "object"},
                                                  "/research", "c" * 64),
                                AnnouncedWorkflow("other", SPEC, None, None, "v2"))),
        WorkerAnnounced("w3", "gpu", ("embed",), 1, 0, "0.1.0", "h", 7, 0, AT, 1500,
                        tags=("a100", "gpu", "llama-3.1-8b", "örg/model:v2")),
        TaskLogLines(WF, "nöde", None, 1, 1, (
            LogLine(AT, "INFO", "log", "headwater.task", "fetched 3 rows ✓"),
            LogLine(AT + 1, "ERROR", "stderr", "", "Traceback ⏳\n  line 2"))),
        TaskLogLines(WF, "n", 7, 2**31 - 1, 2001, (), True),
        TriggerStored("örders", "acme", {"topic": "shop.orders", "definition": "ship@2",
                                         "input": {"order": "${value}"}}, False, AT),
        TriggerStored("orders", None, None, True, 0),
        WebhookStored("höok", "acme", "https://example.com/h", ("run.failed", "run.waiting"),
                      {"names": ["flöw"], "definitions": []}, "s" * 32, 8, 1000, 600_000,
                      False, AT - 1, AT),
        WebhookStored("h", None, "http://127.0.0.1:1/", (), {}, "x", 1, 0, 0, True, 0, AT),
        OperationRecorded("op-1", AT, "running", {"action": "cancel", "targets": [WF],
                                                  "next": 0, "counts": {"done": 0}}),
        OperationRecorded("op-ü", 0, "done", {"filter": {"label": ["team:a"]}}, "tënant"),
    ]


def samples() -> list[Any]:
    bodies = body_samples()
    return [
        ev.WorkflowSubmitted(WF, SPEC, NESTED, AT, "tënant"),
        ev.WorkflowSubmitted(WF, SPEC, None, 0, None),
        ev.WorkflowSubmitted(WF, SPEC, None, AT, None, rerun={"of": "wf-old", "nodes": {}}),
        ev.WorkflowSubmitted(WF, SPEC, None, AT, None, parent={
            "workflow_id": "pärent", "node": "fetch", "index": None, "attempt": 2}),
        ev.WorkflowSubmitted(WF, SPEC, None, AT, None, paused_by="definition:dëf"),
        ev.CancelRequested(WF, AT, "because"),
        ev.PauseRequested(WF, AT, "req-1", "älice", "for a while"),
        ev.PauseRequested(WF, AT),
        ev.ResumeRequested(WF, AT, "req-2", "bob"),
        ev.ChildSubmitted(f"{WF}:child:2", WF, "child", None, 2, SPEC, NESTED, AT, "tënant"),
        ev.ChildSubmitted(f"{WF}:kids.7:1", WF, "kids", 7, 1, SPEC, None, AT),
        *_with_index(ev.PermitDenied, workflow_id=WF, node="cäll", attempt=3,
                     limiter="limit::concurrency:acme", bound=10_000, at_ms=AT),
        *bodies,
        *(ev.HistoryEvent(WF, seq, body) for seq, body in enumerate(bodies, start=1)),
        ev.HistoryEvent(WF, 2**62, ev.TimerFired(WF, "t", AT)),
        *other_samples(),
    ]


def sample_id(record: Any) -> str:
    if isinstance(record, ev.HistoryEvent):
        return f"HistoryEvent[{record.type}]"
    return type(record).__name__


SAMPLES = samples()


def schema_docs() -> dict[str, Any]:
    return {p.stem: orjson.loads(p.read_bytes()) for p in sorted(SCHEMAS.glob("*.avsc"))}


def standalone(name: str, docs: dict[str, Any]) -> Any:
    """The schema with HistoryEvent's named body types written out in place."""
    doc = docs[name]
    if name != "HistoryEvent":
        return doc
    fields = [dict(f) for f in doc["fields"]]
    for f in fields:
        if f["name"] == "body":
            f["type"] = [docs[t.removeprefix("headwater.")] for t in f["type"]]
    return {**doc, "fields": fields}
