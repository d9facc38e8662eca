"""Reports made sendable (``services.worker.reports``): clean strings, bounded outputs."""

from __future__ import annotations

import orjson
import pytest
from aiokafka.errors import MessageSizeTooLargeError

from headwater import codec
from headwater.core import events as ev
from services.worker.reports import MAX_TEXT_CHARS, clean_text, prepare, stand_in

BASE = ("wf", "n", 2, 1, 1000)
LIMIT = 1024 * 1024


@pytest.mark.parametrize(("text", "expected"), [
    ("plain", "plain"),
    ("caf\u00e9 \U0001f600", "caf\u00e9 \U0001f600"),
    ("\ud800", "?"),
    ("a\udfffb\ud83d", "a?b?"),
])
def test_clean_text_replaces_what_utf8_cannot_encode(text: str, expected: str) -> None:
    assert clean_text(text) == expected
    clean_text(text).encode("utf-8")  # never raises


def test_clean_text_cuts_long_text_and_says_so() -> None:
    text = clean_text("x" * (MAX_TEXT_CHARS + 10))
    assert text == "x" * MAX_TEXT_CHARS + "… (10 more characters)"


@pytest.mark.parametrize("report", [
    ev.TaskFailed(*BASE, "bad \ud800 byte", "RuntimeError", True),
    ev.TaskProgressed(*BASE, 0.5, "step \udc80"),
    ev.TaskStarted(*BASE, "host-\udcff"),
])
def test_lone_surrogates_in_reports_become_question_marks(report: ev.Report) -> None:
    with pytest.raises(UnicodeEncodeError):
        codec.encode(report)  # what used to happen in the worker
    sent, data = prepare(report, LIMIT)
    assert type(sent) is type(report)
    assert codec.decode(data) == sent
    assert "?" in (getattr(sent, "error", "") + getattr(sent, "message", "")
                   + getattr(sent, "worker", ""))


def test_clean_reports_pass_unchanged() -> None:
    report = ev.TaskSucceeded(*BASE, {"words": 3})
    sent, data = prepare(report, LIMIT)
    assert sent is report and data == codec.encode(report)


def test_an_output_over_the_limit_fails_without_retry() -> None:
    report = ev.TaskSucceeded(*BASE, "x" * 2000)
    size = len(codec.encode(report))
    sent, data = prepare(report, 1000)
    assert sent == ev.TaskFailed(
        *BASE, f"output is {size} bytes, over the limit of 1000 (HEADWATER_MAX_OUTPUT_BYTES)",
        "OutputTooLargeError", False)
    assert codec.decode(data) == sent


def test_an_output_at_the_limit_goes_through() -> None:
    report = ev.TaskSucceeded(*BASE, "x" * 2000)
    sent, _ = prepare(report, len(codec.encode(report)))
    assert sent is report


@pytest.mark.parametrize("output", [{1, 2}, {"s": "\ud800"}, 2**70, {1: "int key"}])
def test_an_output_that_is_not_json_fails_without_retry(output: object) -> None:
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(output)
    sent, data = prepare(ev.TaskSucceeded(*BASE, output), LIMIT)
    assert isinstance(sent, ev.TaskFailed)
    assert sent.error.startswith("output is not JSON: ")
    assert not sent.retryable
    assert codec.decode(data) == sent


def test_stand_in_for_an_unsendable_success_is_a_non_retryable_failure() -> None:
    error = MessageSizeTooLargeError("The message is 20000000 bytes")
    replacement = stand_in(ev.TaskSucceeded(*BASE, "big"), error)
    assert replacement is not None
    assert replacement.error == ("the TaskSucceeded report could not be sent: "
                                 "[Error 10] MessageSizeTooLargeError: "
                                 "The message is 20000000 bytes")
    assert (replacement.error_type, replacement.retryable) == ("ReportNotSentError", False)


def test_stand_in_for_an_unsendable_failure_keeps_it_retryable_and_short() -> None:
    original = ev.TaskFailed(*BASE, "y" * 50_000, "RuntimeError", True)
    replacement = stand_in(original, MessageSizeTooLargeError("too big"))
    assert replacement is not None and replacement.retryable
    assert replacement.error.startswith("RuntimeError: yyy")
    assert len(replacement.error) < 2000


@pytest.mark.parametrize("report", [ev.TaskStarted(*BASE), ev.TaskProgressed(*BASE, 0.1, "m")])
def test_informational_reports_have_no_stand_in(report: ev.Report) -> None:
    assert stand_in(report, MessageSizeTooLargeError("x")) is None


def test_a_continuation_is_sent_when_it_fits_and_left_out_when_it_does_not() -> None:
    """A step's report carries the function's next decision only when both fit under
    the limit: a continuation never makes a step fail (the coordinator dispatches the
    activation instead)."""
    small = {"act": 1, "through": 1, "at_ms": 5, "first_ms": 1, "after_ms": 1,
             "decision": {"steps": []}}
    report = ev.TaskSucceeded("wf", "main", 1, 1, 5, {"n": 1}, small)
    sent, data = prepare(report, 10_000)
    assert sent == report and codec.decode(data) == report
    big = {**small, "decision": {"steps": [], "finish": "x" * 20_000}}
    sent, data = prepare(ev.TaskSucceeded("wf", "main", 1, 1, 5, {"n": 1}, big), 10_000)
    assert sent == ev.TaskSucceeded("wf", "main", 1, 1, 5, {"n": 1})
    assert codec.decode(data) == sent and len(data) <= 10_000
