"""The gateway's graceful stop (SIGTERM): stop taking work, finish what is in flight.

On the first SIGTERM or SIGINT the gateway keeps listening but is *stopping*: ``/ready``
answers 503 (a load balancer stops sending it traffic), requests that start work
(submit, cancel) get 503 with ``Retry-After``, reads and event streams are still
served, and every response asks the client to close its connection. Once no request is
in flight (event streams do not count: they never end on their own) and at least
``delay_s`` passed, or when the window ``window_s`` is over, the server stops listening,
ends the event streams cleanly (their clients' reconnections find the port closed and go
elsewhere or retry), waits briefly for connections and cancels what is left
(``server``).

Sources: Kubernetes, "Pod Lifecycle", termination of Pods (endpoints drop a terminating
Pod while it may still get requests, hence a 503 readiness and a short delay);
RFC 9110 §10.2.3 (``Retry-After``), §7.6.1 (``Connection: close``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("headwater.gateway")


class Drain:
    """Whether the gateway is stopping, and how many HTTP requests are in flight.

    Args:
        delay_s: the least time the gateway keeps listening once stopping, seconds.
        window_s: the longest time it waits for requests in flight, seconds.
        clock: monotonic seconds (a stand-in in tests).

    Attributes:
        stopping: True from :meth:`begin` on.
        in_flight: HTTP requests being answered, event streams aside (counted by
            :class:`CountRequests`).
        streams: event streams open (``text/event-stream`` responses).
    """

    def __init__(self, delay_s: float = 0.0, window_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.delay_s = delay_s
        self.window_s = window_s
        self.clock = clock
        self.stopping = False
        self.in_flight = 0
        self.streams = 0
        self._began = 0.0

    def begin(self) -> bool:
        """Start stopping; False if it had started already."""
        if self.stopping:
            return False
        self.stopping = True
        self._began = self.clock()
        return True

    def over(self) -> bool:
        """Whether the server may stop listening now: stopping, and either nothing but
        event streams is in flight (after ``delay_s``) or ``window_s`` passed."""
        if not self.stopping:
            return False
        elapsed = self.clock() - self._began
        return elapsed >= self.window_s or (self.in_flight == 0 and elapsed >= self.delay_s)


class CountRequests:
    """ASGI middleware counting HTTP requests in flight in ``drain.in_flight``, and those
    answered with an event stream in ``drain.streams`` instead; while stopping, its
    responses carry ``Connection: close`` so that keep-alive clients reconnect elsewhere.

    Args:
        app: the application.
        drain: the gateway's drain state.
    """

    def __init__(self, app: ASGIApp, drain: Drain) -> None:
        self.app = app
        self.drain = drain

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Count the request while the application answers it."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        stream = False

        async def counting_send(message: Message) -> None:
            nonlocal stream
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                if not stream and _is_stream(headers):
                    stream = True
                    self.drain.in_flight -= 1
                    self.drain.streams += 1
                if self.drain.stopping:
                    message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        self.drain.in_flight += 1
        try:
            await self.app(scope, receive, counting_send)
        finally:
            if stream:
                self.drain.streams -= 1
            else:
                self.drain.in_flight -= 1


def _is_stream(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether response headers announce ``text/event-stream``."""
    return any(name.lower() == b"content-type" and value.startswith(b"text/event-stream")
               for name, value in headers)
