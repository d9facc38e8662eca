"""Following a run's events, without I/O: ``Follow`` says which request (re)opens the
stream, which events to hand on, when the stream is over and when to give up;
``ResultWatch`` watches a run for ``result`` (a deadline, a stream followed to the terminal event,
pauses while the run's document catches up). ``Client`` and ``AsyncClient`` only open
the streams, read them and sleep, each in its own way.

A stream that drops, or that the gateway closes while it shuts down, is opened again
with ``Last-Event-ID`` (the seq of the last event handed on: none is lost or repeated),
under the retry policy of ``headwater.client.retry``, counted afresh after each event.
"""

from __future__ import annotations

import time
from typing import Protocol

import httpx

from headwater import errors
from headwater.client.http import Call, check_timeout, events_call
from headwater.client.retry import Tries, error_for, unexpected
from headwater.client.types import Event, Workflow

SETTLE_S = 0.1
"""The pause between reads of a run whose terminal event was seen but whose document
does not show it yet, seconds."""


class Settings(Protocol):
    """What a stream needs of its client (``Client``, ``AsyncClient``)."""

    base_url: str
    timeout: float
    """Each request's timeout, seconds."""
    retries: int
    """Extra tries after a connection error or a 503."""


class Deadline:
    """The end of a wait on ``time.monotonic()``.

    Args:
        timeout: the longest wait, seconds (None: no end).

    Raises:
        ValueError: ``timeout`` is not None nor a finite number >= 0.
    """

    def __init__(self, timeout: float | None) -> None:
        wait = check_timeout(timeout)
        self.at = None if wait is None else time.monotonic() + wait

    def read_timeout(self, workflow_id: str, timeout: float) -> float:
        """The read timeout left before the end: ``timeout`` or less, seconds.

        Raises:
            ResultTimeout: the end has passed (``timeout`` in its message).
        """
        if self.at is None:
            return timeout
        left = self.at - time.monotonic()
        if left <= 0:
            raise errors.ResultTimeout(workflow_id, timeout)
        return min(timeout, left)


QUIET_STREAM_S = 35.0
"""The least read timeout of an event stream, seconds: over twice the gateway's ping
interval (``HEADWATER_SSE_PING``, 15 s by default), so that a healthy stream of a quiet
run never times out. A shorter client timeout made each quiet read a lost connection,
and the retries ran out on a healthy gateway."""


class Follow:
    """One run's events after seq ``after``, until the terminal one.

    Args:
        client: the client whose timeout and retries apply.
        workflow_id: the run.
        after: the seq of the last event already seen (0: from the start).
        deadline: when to stop waiting (``ResultTimeout``); None: never.
        first: the request to send until it is answered (a streamed run's ``POST``,
            whose ``accepted`` event, id 0, is handed on once) instead of ``GET
            .../events``.
    """

    def __init__(self, client: Settings, workflow_id: str, after: int = 0,
                 deadline: Deadline | None = None, first: Call | None = None) -> None:
        self.workflow_id, self.last = workflow_id, after
        self._client, self._deadline = client, deadline or Deadline(None)
        self._first, self._greet = first, first is not None
        self._tries = Tries(client.retries, f"events of {workflow_id} from {client.base_url}")

    @classmethod
    def run(cls, client: Settings, call: Call) -> Follow:
        """The events of a streamed run (``http.run_call`` in ``stream`` mode,
        naming the run in its ``id`` parameter): its own stream, then ``GET
        .../events`` once lost."""
        return cls(client, str(call.params["id"]), first=call)

    def call(self) -> Call:
        """The request that opens the stream now: the first one until answered, then
        ``GET .../events`` resuming after the last event (``Last-Event-ID``)."""
        return self._first or events_call(self.workflow_id, self.last)

    def read_timeout(self) -> float:
        """The stream's read timeout, seconds (less near the deadline): the client's
        timeout, but never less than ``QUIET_STREAM_S``, since a run may say nothing for
        longer and the gateway then sends only its pings.

        Raises:
            ResultTimeout: the deadline has passed.
        """
        return self._deadline.read_timeout(self.workflow_id,
                                           max(self._client.timeout, QUIET_STREAM_S))

    def opened(self, response: httpx.Response) -> bool:
        """Take the answer that opens a stream (its body read when it is an error).

        Returns:
            True for a stream to read (2xx), False for a 503 to try again.

        Raises:
            HeadwaterHTTPError: any other error answer (``NotFound`` ...).
        """
        if not unexpected(response):
            self._first = None
            return True
        if self._tries.again(response):
            return False
        raise error_for(response)

    def take(self, event: Event) -> bool:
        """Whether to hand ``event`` on: the ``accepted`` event of a streamed run once,
        then each event after the last one handed on (a resumed stream repeats none)."""
        if event.id == 0 and self._greet:
            self._greet = False
            return True
        if event.id <= self.last:
            return False
        self.last = event.id
        self._tries.reset()
        return True

    def done(self, event: Event) -> bool:
        """Whether the stream is over after handing ``event`` on (the terminal one).

        Raises:
            ResultTimeout: it is not, and the deadline has passed.
        """
        if event.terminal:
            return True
        self.read_timeout()
        return False

    def ended(self, workflow: Workflow) -> bool:
        """Whether a stream that closed without a terminal event was opened after the
        run's end (``workflow``: the run read now): nothing more will come."""
        return workflow.done and workflow.seq <= self.last

    def lost(self, error: httpx.TransportError) -> None:
        """Take a dropped or refused connection (another try follows ``pause``).

        Raises:
            ResultTimeout: the deadline has passed.
            GatewayUnreachable: no try is left.
        """
        self.read_timeout()
        self._tries.check(error)

    def pause(self) -> float:
        """The wait before opening the stream again, seconds (the retry backoff)."""
        return self._tries.pause()


class ResultWatch:
    """``result``'s watch on a run until it ends.

    Args:
        client: the client whose timeout and retries apply.
        workflow_id: the run.
        timeout: the longest wait, seconds (None: no limit).

    Raises:
        ValueError: ``timeout`` is not None nor a finite number >= 0.
    """

    def __init__(self, client: Settings, workflow_id: str, timeout: float | None) -> None:
        self._client, self.workflow_id, self.timeout = client, workflow_id, timeout
        self._deadline = Deadline(timeout)

    def follow(self, after: int) -> Follow:
        """The run's events after seq ``after`` (the seq its document shows) until the
        terminal one, within the deadline."""
        return Follow(self._client, self.workflow_id, after, self._deadline)

    def settle(self) -> float:
        """The pause before reading the run again when its terminal event was seen but
        its document does not show it yet (its status is projected with that event),
        seconds.

        Raises:
            ResultTimeout: the deadline has passed.
        """
        self._deadline.read_timeout(self.workflow_id, self._client.timeout)
        return SETTLE_S

    def timed_out(self) -> errors.ResultTimeout:
        """The error of a wait past its deadline (naming the wait asked for)."""
        return errors.ResultTimeout(self.workflow_id, self.timeout or 0.0)
