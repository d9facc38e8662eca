"""Fault points (``services.common.faults``): parsing, and dying at the armed hit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from services.common import faults


def test_parse_names_points_and_hits() -> None:
    assert faults.parse("") == {}
    assert faults.parse("coordinator.after_publish=3, worker.after_start=1:stop") == {
        "coordinator.after_publish": (3, "kill"), "worker.after_start": (1, "stop")}


def test_parse_takes_a_label_after_the_point() -> None:
    assert faults.parse("worker.after_start@fault.code=2,worker.replaying@w=1:stop") == {
        "worker.after_start@fault.code": (2, "kill"), "worker.replaying@w": (1, "stop")}


@pytest.mark.parametrize("bad", ["nowhere=1", "worker.after_start", "worker.after_start=0",
                                 "worker.after_start=x", "worker.after_start=1:pause",
                                 "worker.after_start@=1", "nowhere@fault.code=1"])
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


@pytest.mark.parametrize(("armed", "printed"), [
    ("worker.after_outcome@b=2", ["a0", "b0", "a1", "b1"]),  # the second pass labelled b
    ("worker.after_outcome=3", ["a0", "b0", "a1"]),  # the third pass, whatever its label
])
def test_a_point_armed_for_a_label_counts_the_passes_with_that_label(
        armed: str, printed: list[str]) -> None:
    code = ("from services.common import faults\n"
            "for i in range(3):\n"
            "    for label in 'ab':\n"
            "        print(f'{label}{i}', flush=True)\n"
            "        faults.point('worker.after_outcome', label)\n")
    env = {**os.environ, faults.ENV: armed}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60, cwd=os.getcwd())
    assert done.returncode == -signal.SIGKILL
    assert done.stdout.split() == printed
    assert f"fault point {armed.split('=')[0]} reached" in done.stderr


def test_the_process_stands_still_at_an_armed_stop_until_continued() -> None:
    code = ("from services.common import faults\n"
            "for i in range(3):\n"
            "    faults.point('worker.after_outcome')\n"
            "    print(i, flush=True)\n")
    env = {**os.environ, faults.ENV: "worker.after_outcome=2:stop"}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                            text=True, cwd=os.getcwd())
    assert proc.stdout is not None
    assert proc.stdout.readline() == "0\n"
    deadline = time.monotonic() + 30
    while _state(proc.pid) != "T":
        assert time.monotonic() < deadline, "never stopped"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGCONT)
    out, _ = proc.communicate(timeout=60)
    assert (proc.returncode, out) == (0, "1\n2\n")


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]
