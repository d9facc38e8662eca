"""uvicorn's server with a drain before its graceful shutdown.

uvicorn alone (``Server.handle_exit``, uvicorn 0.3x-0.5x) answers SIGTERM or SIGINT by
setting ``should_exit``: within 0.1 s its main loop closes the listening sockets (so a
readiness probe gets "connection refused", never a 503), closes idle keep-alive
connections, waits for the others (forever, unless ``timeout_graceful_shutdown``), runs
the lifespan shutdown and re-raises the signal, so the process dies of it. A second
SIGINT skips the waiting. sse-starlette patches ``handle_exit`` (and polls
``should_exit``) to cancel every open event stream, which cuts the chunked response off
mid-stream (the client sees an incomplete read).

:class:`GatewayServer` first drains (``drain``): the first signal marks the gateway
stopping while it keeps listening; once :meth:`Drain.over` holds it sets
``should_exit``, and uvicorn's shutdown follows with ``timeout_graceful_shutdown`` =
``CLOSE_GRACE_S``: it stops listening, then the event streams end cleanly (their
clients' reconnections find the port closed, never a 503 they would not retry, as
browsers' ``EventSource`` does not), then connections are waited for. A second signal
stops at once (``force_exit``). The process exits 0.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from types import FrameType

import uvicorn
from sse_starlette.sse import AppStatus

from services.gateway.lifetime import Runtime

log = logging.getLogger("headwater.gateway")

CLOSE_GRACE_S = 3
"""How long uvicorn's shutdown waits for connections after the drain, seconds; what is
left then is cancelled."""


class GatewayServer(uvicorn.Server):
    """A uvicorn server that drains before it shuts down.

    Args:
        config: uvicorn's configuration (its ``timeout_graceful_shutdown`` applies after
            the drain).
        runtime: the app's runtime, whose ``drain`` the first signal starts.
    """

    def __init__(self, config: uvicorn.Config, runtime: Runtime) -> None:
        super().__init__(config)
        self.runtime = runtime
        self.signalled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        AppStatus.enable_automatic_graceful_drain = False  # the streams end in shutdown()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Remember the event loop (signal handlers run outside it), then start."""
        self._loop = asyncio.get_running_loop()
        await super().startup(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """The first SIGTERM/SIGINT starts the drain; a second one (or one before the
        server started) stops at once."""
        if self.signalled or self._loop is None:
            self.should_exit = True
            self.force_exit = self.signalled
            return
        self.signalled = True
        self._loop.call_soon_threadsafe(self.runtime.begin_shutdown, signal.Signals(sig).name)

    async def on_tick(self, counter: int) -> bool:
        """uvicorn's tick (every 0.1 s); ends the main loop once the drain is over."""
        drain = self.runtime.drain
        if not self.should_exit and drain.over():
            log.info("gateway drained (%d requests still in flight): closing", drain.in_flight)
            self.should_exit = True
        return await super().on_tick(counter)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Stop listening, end the event streams cleanly, then uvicorn's shutdown."""
        for server in getattr(self, "servers", ()):
            server.close()  # uvicorn closes them again first thing: harmless
        self.runtime.notifier.end_streams()
        await super().shutdown(sockets)
