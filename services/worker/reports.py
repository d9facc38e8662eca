"""Reports made sendable: every string valid UTF-8, every outcome within the size limit.

An outcome that cannot be encoded or sent leaves its workflow waiting until the
attempt's heartbeat timeout, and retried for nothing. So the worker passes every report
through :func:`prepare` before producing it, and when producing still fails for good,
sends :func:`stand_in` instead.

Pure functions: no I/O, no clock.
"""

from __future__ import annotations

import dataclasses

from headwater import blobs, codec
from headwater.core import events as ev
from services.worker.tracebacks import MAX_TRACEBACK_CHARS

MAX_TEXT_CHARS = 16_384
"""Error and progress messages are cut to this many characters (a report must stay small)."""

_LIMITED_FIELDS = frozenset({"error", "message"})


def clean_text(text: str, limit: int | None = MAX_TEXT_CHARS) -> str:
    """``text`` as valid UTF-8 and at most about ``limit`` characters long.

    Args:
        text: any string, e.g. an exception's message; it may hold lone surrogates
            (``"\\ud800"``), which UTF-8 cannot encode.
        limit: characters kept before a ``… (N more characters)`` note; None: no limit.

    Returns:
        The text with every unencodable character replaced by ``?``, cut if too long.
    """
    safe = text.encode("utf-8", errors="replace").decode("utf-8")
    if limit is not None and len(safe) > limit:
        safe = f"{safe[:limit]}… ({len(safe) - limit} more characters)"
    return safe


def clean_tail(text: str, limit: int = MAX_TRACEBACK_CHARS) -> str:
    """``text`` as valid UTF-8, and when longer than ``limit`` characters its last ones
    after a ``[... N characters left out ...]`` line (a traceback's innermost frames and
    its exception line are at its end)."""
    safe = clean_text(text, None)
    if len(safe) <= limit:
        return safe
    kept = safe[len(safe) - limit + 60:]
    return f"[... {len(safe) - len(kept)} characters left out ...]\n{kept}"


def cleaned(report: ev.Report) -> ev.Report:
    """``report`` with every string field passed through :func:`clean_text` (error and
    progress messages also cut to ``MAX_TEXT_CHARS``; a traceback to its last
    ``MAX_TRACEBACK_CHARS``, :func:`clean_tail`); the same object if all were clean.
    """
    changes: dict[str, str] = {}
    for field in dataclasses.fields(report):
        value = getattr(report, field.name)
        if isinstance(value, str):
            clean = (clean_tail(value) if field.name == "traceback" else
                     clean_text(value, MAX_TEXT_CHARS if field.name in _LIMITED_FIELDS else None))
            if clean != value:
                changes[field.name] = clean
    return dataclasses.replace(report, **changes) if changes else report  # type: ignore[arg-type]


def failed(report: ev.Report, error: str, error_type: str, retryable: bool) -> ev.TaskFailed:
    """A ``TaskFailed`` for the same attempt and time as ``report``."""
    return ev.TaskFailed(report.workflow_id, report.node, report.index, report.attempt,
                         report.at_ms, clean_text(error), error_type, retryable)


def prepare(report: ev.Report, max_output_bytes: int) -> tuple[ev.Report, bytes]:
    """The report to send for ``report``, and its encoding.

    Args:
        report: a report as the runner or the progress reporter made it.
        max_output_bytes: largest encoded ``TaskSucceeded``, bytes.

    Returns:
        ``(report, bytes)`` with strings cleaned (:func:`cleaned`). A ``TaskSucceeded``
        whose output is not JSON, or whose encoding is over ``max_output_bytes``, is
        replaced by a non-retryable ``TaskFailed``: another attempt would do the same. A
        continuation that does not fit with the output is left out (never the cause of
        a failure).

    Raises:
        ValueError: a report other than ``TaskSucceeded`` does not fit its schema.
    """
    report = cleaned(report)
    if not isinstance(report, ev.TaskSucceeded):
        return report, codec.encode(report)
    if report.continuation is not None:  # sent only when it fits, else left out: the
        try:  # coordinator then dispatches that activation as usual
            data = codec.encode(report)
        except ValueError:
            data = b""
        if 0 < len(data) <= max_output_bytes:
            return report, data
        report = dataclasses.replace(report, continuation=None)
    try:
        data = codec.encode(report)
    except ValueError as e:
        cause = e.__cause__ or e
        return _encoded(failed(report, f"output is not JSON: {cause}", "TypeError", False))
    if len(data) > max_output_bytes:
        by_reference = (" even with its parts over HEADWATER_BLOB_THRESHOLD_BYTES stored "
                        "by reference" if next(blobs.refs_in(report.output), None) else "")
        return _encoded(failed(
            report, f"output is {len(data)} bytes{by_reference}, over the limit of "
            f"{max_output_bytes} (HEADWATER_MAX_OUTPUT_BYTES)", "OutputTooLargeError", False))
    return report, data


def stand_in(report: ev.Report, error: BaseException) -> ev.TaskFailed | None:
    """What to send when ``report`` cannot be sent for a reason that will not go away.

    Args:
        report: the report that could not be sent.
        error: why (e.g. aiokafka's ``MessageSizeTooLargeError``).

    Returns:
        For an outcome, a ``TaskFailed`` that says so: non-retryable in place of a
        ``TaskSucceeded`` (the same output would fail the same way), as retryable as the
        original in place of a ``TaskFailed``. None for every other report (started,
        progress, heartbeat, checkpoint, chunk), which is dropped (the sender is told).
    """
    if not isinstance(report, ev.TaskSucceeded | ev.TaskFailed):
        return None
    text, name = str(error), type(error).__name__
    reason = f"the {type(report).__name__} report could not be sent: " \
        f"{text if name in text else f'{name}: {text}'}"
    if isinstance(report, ev.TaskSucceeded):
        return failed(report, reason, "ReportNotSentError", False)
    return failed(report, f"{report.error_type}: {report.error[:1000]} ({reason})",
                  "ReportNotSentError", report.retryable)


def _encoded(report: ev.TaskFailed) -> tuple[ev.Report, bytes]:
    return report, codec.encode(report)
