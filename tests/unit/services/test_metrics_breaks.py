"""Ways to break the metrics: an attempt counted under two outcomes, label values a
client creates without bound, and deployments whose endpoints nobody can scrape."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import REGISTRY

from headwater.core import events as ev
from services.coordinator.metrics import OUTCOMES, count_events
from services.gateway import metrics as gateway_metrics
from services.gateway.queues.figures import Lag

REPO = Path(__file__).resolve().parents[3]
WF = "wf-breaks"
AT = 1_700_000_000_000
LOOPBACK = ("127.0.0.1", "localhost", "::1")
OWN_ENDPOINT = ("services.coordinator", "services.worker", "services.projector")


def _attempts() -> float:
    return sum(s.value for family in REGISTRY.collect() for s in family.samples
               if s.name == "headwater_attempts_total" and s.labels["outcome"] in OUTCOMES)


def _history(*bodies: Any) -> list[ev.HistoryEvent]:
    return [ev.HistoryEvent(b.workflow_id, seq, b) for seq, b in enumerate(bodies, 1)]


def test_an_attempt_cancelled_in_its_retry_backoff_is_counted_once() -> None:
    """Attempt 1 fails (one batch); the workflow is cancelled while the task waits for
    its retry: ``ending._cancel_tasks`` records ``TaskCancelled`` for the same attempt 1,
    which must not count a second outcome. A running attempt's cancel still counts."""
    from headwater.core.machine import step

    doc = {"name": "b", "nodes": [{"id": "f", "task": "t.f",
                                   "retry": {"max_attempts": 3, "backoff_base": 60}},
                                  {"id": "g", "task": "t.g"}]}
    state = step(None, ev.WorkflowSubmitted(WF, doc, None, AT)).state
    failed = step(state, ev.TaskFailed(WF, "f", None, 1, AT + 5, "boom", "E"))
    before = _attempts()
    count_events(failed.events, {WF: failed.state})  # type: ignore[dict-item]
    cancelled = step(failed.state, ev.CancelRequested(WF, AT + 10, "stop"))
    assert [type(e.body).__name__ for e in cancelled.events].count("TaskCancelled") == 2
    count_events(cancelled.events, {WF: cancelled.state})  # type: ignore[dict-item]
    # f: failed once (its cancel in the backoff not again); g: cancelled while queued.
    assert _attempts() - before == 2


class _Figures:
    """Topics made by submissions of random queue names (auto-created by the broker)."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    async def task_queues(self, stale_ok: bool = False) -> set[str]:
        return self.names

    async def lag(self, queue: str) -> Lag:
        return Lag(0)


class _Registry:
    """No worker announced any queue."""

    def queues(self) -> set[str]:
        return set()

    def live(self, now_ms: int) -> list[Any]:
        return []


def test_queues_no_worker_ever_served_add_no_series() -> None:
    # POST /v1/workflows with queue_anyway (or a record on the submissions topic) and a
    # fresh queue name per request: the coordinator produces to <prefix>.tasks.<name>,
    # the broker creates it, and every scrape then shows four series for it, forever.
    junk = {f"junk-{i}" for i in range(300)}
    asyncio.run(gateway_metrics.refresh_queues(_Figures(junk), _Registry()))  # type: ignore[arg-type]
    shown = {s.labels["queue"] for m in REGISTRY.collect()
             if m.name == "headwater_queue_backlog_dispatches" for s in m.samples}
    asyncio.run(gateway_metrics.refresh_queues(_Figures(set()), _Registry()))  # type: ignore[arg-type]
    assert not shown & junk, f"{len(shown & junk)} queue label values made by clients"


def _k8s_env(component: str) -> dict[str, str]:
    doc = next(d for d in yaml.safe_load_all(
        (REPO / "infra/k8s/base" / f"{component}.yaml").read_text())
        if d and d.get("kind") in ("Deployment", "StatefulSet"))
    container = doc["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: str(e.get("value", "")) for e in container.get("env", [])}
    kustomization = yaml.safe_load((REPO / "infra/k8s/base/kustomization.yaml").read_text())
    for generator in kustomization.get("configMapGenerator", []):
        for literal in generator.get("literals", []):
            name, _, value = literal.partition("=")
            env.setdefault(name, value)
    return env


def test_the_k8s_metrics_endpoints_listen_beyond_the_pod() -> None:
    # HEADWATER_METRICS_HOST defaults to 127.0.0.1: Prometheus, in another pod, cannot
    # reach an endpoint bound to the container's loopback.
    unreachable = [c for c in ("coordinator", "worker-cpu", "worker-gpu", "projector")
                   if _k8s_env(c).get("HEADWATER_METRICS_HOST", "127.0.0.1") in LOOPBACK]
    assert not unreachable, f"metrics on loopback only in: {unreachable}"


def test_the_compose_metrics_endpoints_listen_beyond_the_container() -> None:
    compose = yaml.safe_load((REPO / "infra/docker-compose.yml").read_text())
    unreachable = []
    for name, service in compose.get("services", {}).items():
        command = " ".join(map(str, service.get("command") or []))
        if not any(m in command for m in OWN_ENDPOINT):
            continue
        env = service.get("environment") or {}
        if isinstance(env, list):
            env = dict(e.partition("=")[::2] for e in env)
        if str(env.get("HEADWATER_METRICS_HOST", "127.0.0.1")) in LOOPBACK:
            unreachable.append(name)
    assert not unreachable, f"metrics on loopback only in: {unreachable}"
