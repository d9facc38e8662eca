"""The worker's settings refuse what would make it spin or loop for ever: an announce
interval outside [0.1, 60] s (or not a finite number: beyond 60 s liveness, which counts
3 intervals of at most 60 s, would lapse between announcements) and a queue name a Kafka
topic cannot carry."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from services.worker.announce import Announcer
from services.worker.settings import Settings


@pytest.mark.parametrize("raw", ["0", "-1", "0.05", "inf", "-inf", "nan", "1e7", "60.5", "3600"])
def test_an_announce_interval_out_of_range_is_refused(raw: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_ANNOUNCE_S", raw)
    with pytest.raises(ValueError, match=r"HEADWATER_ANNOUNCE_S must be a number of seconds "
                                         r"from 0\.1 to 60, got"):
        Settings.from_env()


@pytest.mark.parametrize(("raw", "seconds"), [("0.1", 0.1), ("5", 5.0), ("60", 60.0)])
def test_an_announce_interval_in_range_is_taken(raw: str, seconds: float,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_ANNOUNCE_S", raw)
    assert Settings.from_env().announce_s == seconds


@pytest.mark.parametrize("raw", ["0", "-5", "501", "60000"])
def test_a_fetch_wait_out_of_range_is_refused(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_FETCH_WAIT_MS", raw)
    with pytest.raises(ValueError, match=r"HEADWATER_FETCH_WAIT_MS must be a number of ms "
                                         r"from 1 to 500, got"):
        Settings.from_env()


def test_a_fetch_wait_is_500_ms_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEADWATER_FETCH_WAIT_MS", raising=False)
    assert Settings.from_env().fetch_wait_ms == 500
    monkeypatch.setenv("HEADWATER_FETCH_WAIT_MS", "100")
    assert Settings.from_env().fetch_wait_ms == 100


@pytest.mark.parametrize("queue", ["a/b", "", "a b", "q" * 65, "tâche", "a.b"])
def test_a_queue_name_a_topic_cannot_carry_is_refused(queue: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_QUEUE", queue)
    with pytest.raises(ValueError, match="HEADWATER_QUEUE"):
        Settings.from_env()
    monkeypatch.delenv("HEADWATER_QUEUE")
    if queue:
        with pytest.raises(ValueError, match="--queue"):
            Settings.from_env(queue=queue)


@pytest.mark.parametrize("queue", ["cpu", "gpu-big_2", "q" * 64])
def test_a_good_queue_name_is_taken(queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_QUEUE", queue)
    assert Settings.from_env().queue == queue


@pytest.mark.parametrize("seconds", [0.0, -1.0, float("inf"), float("nan")])
def test_the_announcer_refuses_an_interval_that_would_spin_or_crash(seconds: float) -> None:
    settings = dataclasses.replace(Settings(**Settings.common_from_env()), announce_s=seconds)
    with pytest.raises(ValueError, match="announce_s must be a positive number of seconds"):
        Announcer(settings, ["t"], lambda: 0)


def test_task_log_bounds_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_TASK_LOG_MAX_LINES", "50")
    monkeypatch.setenv("HEADWATER_TASK_LOG_LINE_BYTES", "100")
    limits = Settings.from_env().task_log
    assert (limits.max_lines, limits.line_bytes, limits.max_bytes) == (50, 100, 512 * 1024)
    monkeypatch.setenv("HEADWATER_TASK_LOG_MAX_BYTES", "0")
    with pytest.raises(ValueError, match="HEADWATER_TASK_LOG_MAX_BYTES must be above 0"):
        Settings.from_env()


def test_a_workflow_cache_size_that_is_no_number_stops_the_worker_not_the_sdk(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK reads ``HEADWATER_WORKFLOW_CACHE_SIZE`` when imported: ``abc`` made
    ``import headwater`` raise a bare ``ValueError`` in every process, clients too."""
    monkeypatch.setenv("HEADWATER_WORKFLOW_CACHE_SIZE", "abc")
    imported = subprocess.run([sys.executable, "-c", "import headwater.workflows.activation"],
                              capture_output=True, text=True, check=False)
    assert imported.returncode == 0, imported.stderr[-500:]
    with pytest.raises(ValueError, match="HEADWATER_WORKFLOW_CACHE_SIZE must be an integer"):
        Settings.from_env()
