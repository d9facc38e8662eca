"""A deployment's CPU time by role, read from ``/proc/<pid>/stat`` (this test's own
process stands in for the services: no broker)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from load.cpu import ROLES, cpu_by_role, cpu_s_of_stat, cpu_used, process_cpu_s, role_of
from ops import localstack
from ops.sandbox import Sandbox

# proc(5): pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
# cmajflt utime stime cutime cstime ...
STAT = "4242 (py (x) y) S 1 4242 4242 0 -1 4194304 900 0 0 0 250 50 7 3 20 0 5 0"


def test_cpu_time_is_user_plus_system_ticks_after_the_name() -> None:
    """A name with spaces and parentheses does not shift the fields, and the children's
    times (cutime, cstime) are not counted."""
    assert cpu_s_of_stat(STAT, ticks_per_s=100) == 3.0


@pytest.mark.parametrize("stat", ["", "4242 (py) S 1 2", "4242 (py) S 1 2 3 4 5 6 7 8 x y 0"])
def test_a_line_that_is_not_a_stat_is_an_error(stat: str) -> None:
    with pytest.raises(ValueError, match="stat"):
        cpu_s_of_stat(stat)


def test_this_process_has_used_cpu_time_and_it_grows() -> None:
    before = process_cpu_s(os.getpid())
    deadline = before + 0.05
    while process_cpu_s(os.getpid()) < deadline:  # spin until the kernel's ticks show it
        sum(range(10_000))
    assert process_cpu_s(os.getpid()) >= deadline > 0


@pytest.mark.parametrize(("name", "role"), [
    ("coordinator", "coordinators"), ("coordinator-4", "coordinators"),
    ("worker-cpu-2", "workers"), ("gateway", "others"), ("projector", "others"),
    ("coordinators-audit", "others"),
])
def test_services_are_sorted_into_roles_by_name(name: str, role: str) -> None:
    assert role_of(name) == role


def test_a_sandbox_sums_its_processes_by_role(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_HOME", str(tmp_path))
    (tmp_path / "run").mkdir()
    names = ("coordinator", "coordinator-2", "worker-cpu-1")
    for name in names:
        localstack.Service(name, ()).pid_file.write_text(str(os.getpid()))
    sandbox = Sandbox("p", "dsn", "http://gw", tmp_path, {},
                      [localstack.Service(n, (sys.executable,)) for n in names])
    got = cpu_by_role(sandbox)
    assert set(got) == set(ROLES) and got["others"] == 0
    assert got["coordinators"] >= 2 * got["workers"] > 0  # the same process, counted twice


def test_use_is_the_difference_and_a_restart_is_an_error() -> None:
    before = {"coordinators": 1.0, "workers": 2.0, "others": 0.5}
    after = {"coordinators": 4.0, "workers": 2.5, "others": 0.5}
    assert cpu_used(before, after) == {"coordinators": 3.0, "workers": 0.5, "others": 0.0}
    with pytest.raises(ValueError, match="restarted"):
        cpu_used(after, before)
