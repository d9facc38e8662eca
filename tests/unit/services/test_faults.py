"""Fault points (``services.common.faults``): parsing, and dying at the armed hit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from services.common import faults


def test_parse_names_points_and_hits() -> None:
    assert faults.parse("") == {}
    assert faults.parse("coordinator.after_publish=3, worker.after_start=1") == {
        "coordinator.after_publish": 3, "worker.after_start": 1}


@pytest.mark.parametrize("bad", ["nowhere=1", "worker.after_start", "worker.after_start=0",
                                 "worker.after_start=x"])
def test_parse_rejects_unknown_points_and_bad_hits(bad: str) -> None:
    with pytest.raises(ValueError, match="HEADWATER_FAULTS"):
        faults.parse(bad)


def test_an_unarmed_point_does_nothing() -> None:
    faults.point("worker.after_start")  # this process has no HEADWATER_FAULTS


def test_the_process_dies_by_sigkill_at_the_armed_hit() -> None:
    code = ("from services.common import faults\n"
            "for i in range(5):\n"
            "    print(i, flush=True)\n"
            "    faults.point('worker.after_outcome')\n")
    env = {**os.environ, faults.ENV: "worker.after_outcome=3"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60, cwd=os.getcwd())
    assert done.returncode == -signal.SIGKILL
    assert done.stdout.split() == ["0", "1", "2"]
