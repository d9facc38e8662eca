"""Wires the gateway: settings, Kafka producer, PostgreSQL pool, notifier, each
resource's routes (``runs``, ``control``, ``queues``, ``definitions``, ``schedules``,
``auth``, ``logs``, ``ui``), the OpenAPI document, and the drain state that SIGTERM flips
(``drain``, ``server``)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator

from fastapi import APIRouter, FastAPI

from services.common import tracing
from services.common.blobs.claims import store_from_env, threshold_from_env
from services.common.blobs.s3 import S3Settings
from services.common.db import connect_pool
from services.common.kafka.client import broker_answers, ensure_topics, make_producer
from services.gateway import health, metrics
from services.gateway.auth import api as auth_api
from services.gateway.blobs import api as blobs_api
from services.gateway.blobs.payloads import claims_over
from services.gateway.control import api as control_api
from services.gateway.definitions import api as definitions_api
from services.gateway.drain import Drain
from services.gateway.edge import middleware, problems
from services.gateway.lifetime import Runtime
from services.gateway.limits import api as limits_api
from services.gateway.logs import api as logs_api
from services.gateway.openapi import document
from services.gateway.operations import api as operations_api
from services.gateway.pauses import api as pauses_api
from services.gateway.queues import api as queues_api
from services.gateway.reruns import api as reruns_api
from services.gateway.runs import api as runs_api
from services.gateway.runs import paths as workflow_paths
from services.gateway.runs import run as run_api
from services.gateway.schedules import api as schedules_api
from services.gateway.settings import Settings
from services.gateway.signals import api as signals_api
from services.gateway.tasks import api as tasks_api
from services.gateway.triggers import api as triggers_api
from services.gateway.triggers.catalog import Catalog
from services.gateway.triggers.runner import Plumbing
from services.gateway.ui import routes as ui_routes
from services.gateway.webhooks import api as webhooks_api

log = logging.getLogger("headwater.gateway")

ROUTERS: tuple[APIRouter, ...] = (
    health.router, runs_api.router, tasks_api.router, control_api.router, run_api.router,
    queues_api.router, definitions_api.router, schedules_api.router, auth_api.router,
    reruns_api.router, logs_api.router, signals_api.router, blobs_api.router,
    limits_api.router, triggers_api.router, webhooks_api.router, pauses_api.router,
    operations_api.router,
)
"""Every resource's routes, in the order they are matched: a new resource's router is
one more entry here (the web UI installs itself last, ``ui_routes.install``)."""


async def _connect(app: FastAPI, runtime: Runtime, threshold: int,
                   s3: S3Settings | None) -> None:
    """Connect in the background so that /ready can answer 503 meanwhile."""
    settings = runtime.settings
    await ensure_topics(settings, [settings.topics.submissions, settings.topics.control],
                        timeout_s=float("inf"))
    runtime.pool = await connect_pool(settings.pg_dsn, max_size=20, timeout_s=float("inf"))
    runtime.claims = claims_over(runtime.pool, threshold, s3)
    runtime.producer = make_producer(settings)
    await runtime.producer.start()
    runtime.broker_check = functools.partial(broker_answers, runtime.producer.client)
    await runtime.start_queues()
    await runtime.notifier.start(settings.pg_dsn)
    await definitions_api.start(app)  # the definitions topic, read into its tables
    runtime.start_registrar(app.router.routes)  # then what workers announce is registered
    runtime.triggers = Catalog(Plumbing(settings, runtime.producer, runtime.pool,
                                        settings.auth.headers, settings.produce_timeout_s),
                               run=settings.run_triggers)
    await runtime.triggers.start()  # the triggers topic read, their consumers started
    await operations_api.start(app)  # the operations topic read; those left running go on
    runtime.ready = True
    log.info("gateway ready on %s:%d", settings.host, settings.port)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the FastAPI app; Kafka and PostgreSQL connect in the lifespan.

    Args:
        settings: the gateway's settings; read from the environment when omitted.

    Returns:
        The app; its ``state.hw`` is the ``Runtime`` (connected once the lifespan has
        started).
    """
    settings = settings or Settings.from_env()
    threshold = threshold_from_env()  # HEADWATER_BLOB_THRESHOLD_BYTES: refused at start
    s3 = store_from_env()  # HEADWATER_BLOB_STORE and HEADWATER_S3_*: likewise
    runtime = Runtime(settings, drain=Drain(settings.shutdown_delay_s, settings.drain_s))

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.hw = runtime
        connecting = asyncio.create_task(_connect(app, runtime, threshold, s3))
        try:
            yield
        finally:
            runtime.ready = False
            connecting.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await connecting
            await operations_api.stop(app)
            await runtime.close()

    # GET /metrics, and every request counted (inside the middleware added below)
    app = metrics.install(FastAPI(title="Headwater", version="1", lifespan=lifespan,
                                  telemetry=tracing.HTTP_TELEMETRY))
    app.state.hw = runtime
    problems.install(app)
    document.install(app)  # /openapi.json: FastAPI's document, completed
    middleware.install(app, runtime.drain, settings.auth.authenticator, settings.cors_origins,
                       settings.metrics_token)
    for router in ROUTERS:
        app.include_router(router)
    ui_routes.install(app)  # the web UI at /ui
    return workflow_paths.install(app)  # POST <path> of a @workflow, matched last
