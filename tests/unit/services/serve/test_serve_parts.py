"""What ``headwater serve`` runs (``services/serve``): every part's settings from the
environment, and its command line."""

from __future__ import annotations

import pytest

from services.serve.__main__ import main
from services.serve.app import parts_from_env


def test_each_queue_gets_a_worker_named_apart_and_the_projection_is_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_PROJECTION", "off")
    monkeypatch.setenv("HEADWATER_WORKER_ID", "box")
    parts = parts_from_env(["cpu", "gpu", "cpu"], ["examples.stdlib_search.tasks"], 3)
    assert parts.coordinator.projection, "the projector runs inside this process"
    assert [(w.queue, w.worker_id, w.concurrency) for w in parts.workers] == [
        ("cpu", "box-cpu", 3), ("gpu", "box-gpu", 3)]
    assert parts.workers[0].task_modules == ("examples.stdlib_search.tasks",)
    assert parts_from_env([], None, None).workers == ()


def test_a_bad_setting_is_named_without_a_traceback(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HEADWATER_METRICS_PORT", "http")
    with pytest.raises(SystemExit) as exit_:
        main(["--queue", "cpu"])
    assert exit_.value.code == 2
    assert "HEADWATER_METRICS_PORT" in capsys.readouterr().err
