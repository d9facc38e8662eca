"""The profiling run's report and summary (``load.profile.report``), and where a window's
files go (``load.profile.sampler``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from load.profile.report import Outcome, Sampled, markdown, summary
from load.profile.sampler import Sampler
from load.profile.stacks import aggregate
from ops import localstack
from ops.sandbox import Sandbox

PROFILE = aggregate(Counter({("main", "poll"): 150, ("main", "encode"): 50}))
COORDINATOR = Sampled("B3-light", 4.0, "coordinator", PROFILE, 100,
                      "B3-light/coordinator.raw.txt", "B3-light/coordinator.svg")


def test_busy_is_samples_over_what_one_busy_thread_gives() -> None:
    assert COORDINATOR.busy == 0.5  # 200 samples of 400 at 100/s over 4 s


def test_the_report_has_settings_figures_and_a_table_per_window_and_process() -> None:
    text = markdown({"commit": "abc123", "sizes": "quick"},
                    [Outcome("B3", {"hop_p50_ms": 12.345}),
                     Outcome("B2", {}, "TimeoutError: chains")], [COORDINATOR])
    assert "- commit: abc123" in text
    assert "- B3: hop_p50_ms 12.35" in text
    assert "- B2: (none) — failed: TimeoutError: chains" in text
    assert "## B3-light — coordinator" in text
    assert "200 samples in 4.0 s at 100/s (busy 50% of one thread)" in text
    assert "[flamegraph](B3-light/coordinator.svg)" in text
    assert "| 1 | 75.0 | `poll` | 100.0 | `main` |" in text


def test_the_summary_lists_the_top_self_frames_per_process() -> None:
    text = summary([COORDINATOR], n=1)
    assert text.splitlines() == ["B3-light / coordinator: 200 samples, busy 50% of one thread",
                                 "   75.0%  poll"]


def test_windows_of_one_label_get_directories_of_their_own(tmp_path: Path) -> None:
    services = [localstack.Service("projector", ("python",))]  # not a profiled service
    sandbox = Sandbox("p", "dsn", "http://gw", tmp_path / "home", {}, services)
    sampler = Sampler(tmp_path / "out", 100, "/nonexistent/py-spy")
    for _ in range(2):
        with sampler.window(sandbox, "B2-spec-1-coordinator"):
            pass
    assert [w.label for w in sampler.windows] == ["B2-spec-1-coordinator",
                                                   "B2-spec-1-coordinator-2"]
    assert all(w.directory.is_dir() and w.services == () for w in sampler.windows)
