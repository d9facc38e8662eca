"""Prometheus metrics, what every service shares: the ``/metrics`` endpoint of a process
(on a port of its own, beside the process's ``/health`` and ``/ready`` probes,
``services.common.probes``; the gateway answers on its HTTP port instead), the dead-letter
count, the histogram buckets, the cap on label values clients choose, and the metrics
port the local stack gives each process.

Names follow Prometheus' conventions ("Metric and label naming",
https://prometheus.io/docs/practices/naming/): the ``headwater_`` prefix, base units in
the name (``_seconds``), ``_total`` on counters. Labels take a bounded set of values (a
queue, a topic, an outcome, a route template; task and workflow names through
``BoundedLabels``, capped with an ``other`` value), never a workflow id. Each service's own
metrics are in its ``metrics`` module; docs/metrics.md lists them all.

Settings (read by each service's settings): ``HEADWATER_METRICS_PORT``, the port of the
process's endpoint (each service its own default, ``DEFAULT_PORTS``; 0: none), and
``HEADWATER_METRICS_HOST``, its listen address (``127.0.0.1``, as the gateway's).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, generate_latest

from services.common.probes import PROBES
from services.common.settings import env_int, env_str

log = logging.getLogger("headwater.metrics")

DEFAULT_PORTS = {"serve": 9180, "coordinator": 9181, "projector": 9182, "worker": 9183}
"""Each service's ``HEADWATER_METRICS_PORT`` by default. The local stack gives every
process a port of its own instead (``stack_port``)."""
DEFAULT_HOST = "127.0.0.1"
OWN_PORT = ("services.coordinator", "services.projector", "services.worker",
            "services.serve")
"""The ``python -m`` modules whose process serves its metrics on a port of its own."""

DURATION_BUCKETS_S = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
                      300.0, 600.0, 1800.0, 3600.0, float("inf"))
"""Buckets of task and workflow durations, seconds (10 ms to an hour)."""
LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                     2.5, 5.0, 10.0, float("inf"))
"""Buckets of a batch's or a request's latency, seconds (0.5 ms to 10 s)."""
SIZE_BUCKETS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, float("inf"))
"""Buckets of a batch's size, records."""

OTHER = "other"
"""The label value that stands for every value over a label's cap (``BoundedLabels``),
as ``other`` stands for an unknown HTTP method in the gateway's metrics."""
MAX_LABEL_CHARS = 200
"""Longest label value kept (a task or workflow name is cut there)."""


class BoundedLabels:
    """Label values a client chooses (task and workflow names), kept to a bounded set of
    series: the first ``limit`` distinct combinations this process sees keep their own
    values; every later new one is counted under ``other`` in each label, as the
    gateway's queue gauges show a bounded number of queues. A value is cut at
    ``MAX_LABEL_CHARS``. Safe from several threads.

    Args:
        limit: the most distinct combinations with series of their own.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._seen: set[tuple[str, ...]] = set()
        self._lock = threading.Lock()

    def __call__(self, *values: str) -> tuple[str, ...]:
        """The label values to use for ``values``: themselves (cut), or all ``other``
        once ``limit`` other combinations took the series."""
        key = tuple(v[:MAX_LABEL_CHARS] for v in values)
        if key in self._seen:
            return key
        with self._lock:
            if key in self._seen or len(self._seen) < self.limit:
                self._seen.add(key)
                return key
        return (OTHER,) * len(values)


DEAD_LETTERS = Counter(
    "headwater_dead_letters_total", "Records produced to the dead-letter topic, by the topic the "
    "record came from (the coordinator's inputs and intents, a worker's tasks topic).",
    ["topic"])

_served: list[int | None] = []
"""The port this process's endpoint was asked for (one entry once ``serve`` ran)."""


def port_from_env(service: str) -> int:
    """``HEADWATER_METRICS_PORT``, or ``service``'s default (``DEFAULT_PORTS``).

    Raises:
        ValueError: not an integer from 0 to 65535 (the message names the variable).
    """
    port = env_int("METRICS_PORT", DEFAULT_PORTS[service])
    if not 0 <= port <= 65535:
        raise ValueError(f"HEADWATER_METRICS_PORT must be a port from 0 (none) to 65535, "
                         f"got {port}")
    return port


def host_from_env() -> str:
    """``HEADWATER_METRICS_HOST``, or ``127.0.0.1``."""
    return env_str("METRICS_HOST", DEFAULT_HOST)


class _Endpoint(BaseHTTPRequestHandler):
    """``GET /metrics`` (Prometheus' text format), ``/health`` and ``/ready`` (JSON, 200
    or 503: ``probes.Probes``); 404 for any other path."""

    def do_GET(self) -> None:
        path = self.path.partition("?")[0]
        if path == "/metrics":
            body, kind = exposition()
            self._answer(200, body, kind)
        elif path in ("/health", "/ready"):
            ok, answer = PROBES.health() if path == "/health" else PROBES.ready()
            self._answer(200 if ok else 503, orjson.dumps(answer), "application/json")
        else:
            self._answer(404, b"not found: /metrics, /health, /ready\n", "text/plain")

    def _answer(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: probes come every few seconds."""


def start_http_server(port: int, host: str) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Listen on ``host:port`` and answer ``_Endpoint``'s paths in a daemon thread.

    Raises:
        OSError: the port cannot be bound.
    """
    server = ThreadingHTTPServer((host, port), _Endpoint)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="metrics", daemon=True)
    thread.start()
    return server, thread


def serve(port: int, host: str = DEFAULT_HOST) -> int | None:
    """Serve this process's metrics and probes over HTTP on ``host:port``, in a daemon
    thread, once per process: a later call (the projector inside the coordinator)
    changes nothing.

    A port that cannot be bound (taken) is logged as a warning and the process goes on
    without an endpoint: metrics must not stop a service.

    Args:
        port: the TCP port; 0 serves nothing.
        host: the listen address.

    Returns:
        The port served, or None (0, taken, or asked before).
    """
    if _served:
        return None
    _served.append(port)
    if port == 0:
        return None
    try:
        start_http_server(port, host)
    except OSError as e:
        log.warning("no metrics endpoint: cannot listen on %s:%d (%s); set "
                    "HEADWATER_METRICS_PORT to a free port, or 0", host, port, e)
        _served[0] = None
        return None
    log.info("metrics on http://%s:%d/metrics, probes on /health and /ready", host, port)
    return port


def exposition() -> tuple[bytes, str]:
    """The process's metrics in Prometheus' text format, and its content type."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def stack_port(argv: Sequence[str], env: Mapping[str, str], record: Path) -> int | None:
    """The metrics port the local stack gives a process it starts (``ops.localstack``).

    Args:
        argv: its command line; only ``python -m`` one of ``OWN_PORT`` gets a port.
        env: the environment given for it alone; a ``HEADWATER_METRICS_PORT`` there wins.
        record: its launch record (JSON); the ``metrics_port`` it holds is taken again
            while it is free, so a process keeps its port across restarts.

    Returns:
        The port; 0 when ``HEADWATER_METRICS_PORT=0`` is in this process's environment
        (no endpoints); else a free one. None for a process without a port of its own.
    """
    if len(argv) < 3 or argv[1] != "-m" or argv[2] not in OWN_PORT:
        return None
    if "HEADWATER_METRICS_PORT" in env:
        return int(env["HEADWATER_METRICS_PORT"])
    if env_str("METRICS_PORT", "") == "0":
        return 0
    try:
        before = json.loads(record.read_text()).get("metrics_port")
    except (OSError, ValueError, AttributeError):
        before = None
    if isinstance(before, int) and before > 0 and _bindable(before):
        return before
    with socket.socket() as s:
        s.bind((DEFAULT_HOST, 0))
        return int(s.getsockname()[1])


def _bindable(port: int) -> bool:
    """Whether a server could listen on ``port`` now (``SO_REUSEADDR``, as it does)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((DEFAULT_HOST, port))
        except OSError:
            return False
    return True
