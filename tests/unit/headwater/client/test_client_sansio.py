"""The client's I/O-free pieces on their own: each method's ``Request`` (what it sends,
how it reads the answer), a listing's pages, the retry decisions of ``Tries`` and the
stream decisions of ``Follow`` (no transport: answers are built ``httpx.Response``)."""

from __future__ import annotations

import httpx
import pytest

from headwater import errors
from headwater.client import requests as req
from headwater.client.follow import SETTLE_S, Deadline, Follow, ResultWatch
from headwater.client.retry import Tries
from headwater.client.schedules import acting, listing
from headwater.client.types import Event, Run, workflow_from

DONE = {"id": "wf-1", "name": "n", "status": "succeeded", "seq": 4, "output": 1, "error": ""}


class Settings:
    base_url, timeout, retries = "http://gw", 7.0, 2


def test_each_mode_of_run_asks_and_waits_as_the_gateway_expects() -> None:
    waiting = req.run("docs@2", {"q": 1}, "sync", None, "wf-1")
    assert (waiting.call.path, waiting.call.params) == ("/v1/run/docs%402", {"id": "wf-1"})
    assert waiting.wait_s == req.RUN_WAIT_S and waiting.read_timeout(7.0) == 7.0 + 60.0
    assert req.run("d", None, "sync", 5, "wf-1").read_timeout(7.0) == 12.0
    later = req.run("d", None, "async", 5, None, {"queue_anyway": True})
    assert later.read_timeout(7.0) is None and later.call.headers["Prefer"] == "respond-async"
    assert later.call.params["id"].startswith("wf-") and later.call.params["queue_anyway"]
    stream = req.run("d", None, "stream", None, "wf-9")
    assert stream.call.headers["Accept"] == "text/event-stream"
    assert Follow.run(Settings(), stream.call).workflow_id == "wf-9"
    assert waiting.decode(httpx.Response(200, json=DONE)) == Run(
        "wf-1", "succeeded", True, workflow_from(DONE))
    assert later.decode(httpx.Response(202, json={"id": "wf-2", "status": "accepted"})) \
        == Run("wf-2", "accepted", False)


def test_requests_check_their_arguments_before_anything_is_sent() -> None:
    for build in (lambda: req.get(""), lambda: req.cancel("", "why"),
                  lambda: req.definition_delete(""), lambda: acting("POST", "", "pause"),
                  lambda: req.submit(None, "", None, None),
                  lambda: req.run("d", None, "sync", float("nan"), None)):
        with pytest.raises(ValueError):
            build()


def test_a_submission_and_a_signal_choose_their_ids_once() -> None:
    submitted = req.submit(None, "d", {"a": 1}, None)
    signal = req.signal("wf-1", "go", {}, None, None)
    assert submitted.call.json["id"].startswith("wf-") and signal.call.json["signal_id"]
    assert submitted.decode(httpx.Response(200, json={"id": "x", "status": "running"})) \
        .created is False


def test_a_listing_asks_page_after_page_and_keeps_what_it_found() -> None:
    first = req.definitions()
    assert first.call.params == {"limit": req.PAGE}
    page = {"name": "d", "version": 1}
    one = first.decode(httpx.Response(200, json={"items": [page], "next_cursor": "k"}))
    assert one.next is not None and one.next.call.params == {"limit": req.PAGE,
                                                              "cursor": "k"}
    two = one.next.decode(httpx.Response(200, json={"items": [{**page, "name": "e"}]}))
    assert [d.name for d in two.found] == ["d", "e"] and two.next is None
    assert listing().call.path == "/v1/schedules"


def test_tries_back_off_then_give_up_and_raise_other_answers_at_once() -> None:
    tries = Tries(2, "GET http://gw/v1/queues")
    refused = httpx.ConnectError("refused")
    assert [tries.lost(refused), tries.answered(httpx.Response(
        503, headers={"Retry-After": "1"}))] == [0.2, 1.0]
    with pytest.raises(errors.GatewayUnreachable, match="GET http://gw/v1/queues"):
        tries.lost(refused)
    with pytest.raises(errors.Unavailable):
        tries.answered(httpx.Response(503))
    assert tries.answered(httpx.Response(200)) is None
    with pytest.raises(errors.NotFound):
        Tries(5, "x").answered(httpx.Response(404, json={"title": "Not found"}))
    with pytest.raises(errors.HeadwaterHTTPError) as moved:
        Tries(5, "x").answered(httpx.Response(302))
    assert moved.value.status == 302


def test_a_followed_stream_hands_each_event_on_once_and_resumes_after_it() -> None:
    follow = Follow(Settings(), "wf-1", after=1)
    assert follow.call().headers["Last-Event-ID"] == "1"
    events = [Event(1, "WorkflowAccepted", {}), Event(2, "TaskDispatched", {}),
              Event(2, "TaskDispatched", {}), Event(3, "WorkflowSucceeded", {})]
    assert [follow.take(e) for e in events] == [False, True, False, True]
    assert follow.call().headers["Last-Event-ID"] == "3" and follow.done(events[3])
    assert follow.ended(workflow_from(DONE)) is False  # seq 4 is after 3: it goes on
    assert follow.opened(httpx.Response(503)) is False
    with pytest.raises(errors.NotFound):
        follow.opened(httpx.Response(404, json={"title": "Not found"}))
    follow.lost(httpx.ReadError("reset"))
    assert [follow.pause(), follow.pause()] == [0.2, 0.4]
    with pytest.raises(errors.GatewayUnreachable, match="events of wf-1 from http://gw"):
        follow.lost(httpx.ReadError("reset"))
    with pytest.raises(errors.Unavailable):  # a 503 past the retries
        follow.opened(httpx.Response(503))


def test_a_streamed_run_greets_once_then_reads_the_events_path() -> None:
    first = req.run("d", None, "stream", None, "wf-9").call
    follow = Follow.run(Settings(), first)
    assert follow.call() is first
    assert follow.take(Event(0, "accepted", {"id": "wf-9"}))
    assert not follow.take(Event(0, "accepted", {"id": "wf-9"}))
    assert follow.opened(httpx.Response(200))
    assert follow.call().path == "/v1/workflows/wf-9/events"


def test_a_wait_past_its_deadline_names_the_wait_asked_for() -> None:
    with pytest.raises(errors.ResultTimeout):
        Deadline(0).read_timeout("wf-1", 7.0)
    assert Deadline(None).read_timeout("wf-1", 7.0) == 7.0
    assert Deadline(60).read_timeout("wf-1", 7.0) == 7.0
    watch = ResultWatch(Settings(), "wf-1", 60)
    assert watch.settle() == SETTLE_S
    assert watch.follow(3).call().headers["Last-Event-ID"] == "3"
    assert "0.5 s" in str(ResultWatch(Settings(), "wf-1", 0.5).timed_out())
    with pytest.raises(ValueError, match="timeout must be a finite number"):
        ResultWatch(Settings(), "wf-1", -1)


def test_a_quiet_stream_outlasts_the_gateways_pings_whatever_the_client_timeout() -> None:
    """A run silent for longer than the client's timeout: the gateway sends a ping every
    15 s, so a read timeout under that made each quiet read a lost connection (a short
    ``Client(timeout=2).result(id)`` gave up with ``GatewayUnreachable`` on a healthy
    gateway)."""
    from headwater.client.follow import QUIET_STREAM_S

    quick = Settings()
    quick.timeout = 2.0
    assert Follow(quick, "wf-1").read_timeout() == QUIET_STREAM_S >= 2 * 15.0
    patient = Settings()
    patient.timeout = 90.0
    assert Follow(patient, "wf-1").read_timeout() == 90.0
    assert Follow(quick, "wf-1", deadline=Deadline(5)).read_timeout() <= 5


def test_a_rollback_names_its_version_or_none() -> None:
    back = req.definition_rollback("docs", 2)
    assert (back.call.method, back.call.path, back.call.json) == (
        "POST", "/v1/definitions/docs/rollback", {"to": 2})
    assert req.definition_rollback("docs", None).call.json == {}
    done = back.decode(httpx.Response(200, json={"name": "docs", "version": 2,
                                                 "previous": 3, "latest": 3,
                                                 "changed": True}))
    assert (done.version, done.raw["previous"]) == (2, 3)


def test_a_runs_deadline_and_parent_are_read_from_its_document() -> None:
    parent = {"workflow_id": "p", "node": "ask", "index": None, "attempt": 1, "via": "call"}
    run = workflow_from({**DONE, "deadline": "2026-12-06T17:00:00+00:00", "parent": parent})
    assert run.deadline == "2026-12-06T17:00:00+00:00" and run.parent == parent
    plain = workflow_from(DONE)
    assert plain.deadline is None and plain.parent is None
