"""The deliverer's Prometheus metrics: deliveries decided, attempts by outcome, and how
long an attempt takes. Beside the projector they are served on its process's endpoint
(the coordinator's, or the projector's); alone (``python -m services.webhooks``) on
``HEADWATER_METRICS_PORT`` (9182, the projector's default: the two do not run on one
host's same port unless told to)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from services.common import metrics
from services.common.metrics import LATENCY_BUCKETS_S

DECIDED = Counter("headwater_webhook_deliveries_decided_total",
                  "Webhook deliveries decided from the events topic and kept (a batch "
                  "read again counts again).")
ATTEMPTS = Counter("headwater_webhook_attempts_total", "Webhook delivery attempts, by "
                   "outcome: delivered (2xx), retried (failed, tried again later), dead "
                   "(failed for the last time, or its webhook deleted).", ["outcome"])
ATTEMPT_SECONDS = Histogram("headwater_webhook_attempt_seconds", "Seconds from a "
                            "delivery's POST to the receiver's answer (or the error).",
                            buckets=LATENCY_BUCKETS_S)
OUTCOMES = {"delivered": "delivered", "pending": "retried", "dead": "dead"}
"""A delivery's status after an attempt -> the attempt's ``outcome`` label."""


def serve_from_env() -> int | None:
    """Serve the process's metrics unless they are served already (``metrics.serve``)."""
    return metrics.serve(metrics.port_from_env("projector"), metrics.host_from_env())


def attempted(status: str, seconds: float | None) -> None:
    """Count an attempt after which the delivery is ``status``; ``seconds``: how long
    its POST took (None: none was made)."""
    ATTEMPTS.labels(OUTCOMES.get(status, status)).inc()
    if seconds is not None:
        ATTEMPT_SECONDS.observe(seconds)
