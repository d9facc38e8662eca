"""The fault suite's ``headwater serve`` run (``faultsuite.suite.SERVE_KILL``): only in the
full suite, one process SIGKILLed from outside, found by the worker ids inside it."""

from __future__ import annotations

import pytest

from faultsuite.killer import _pid
from faultsuite.run import serve_service
from faultsuite.suite import FULL, QUICK, SERVE_KILL, serve_plan


def test_the_full_suite_kills_one_serve_process_and_the_quick_one_none() -> None:
    assert [p.name for p in FULL.plans()].count(SERVE_KILL) == 1
    assert SERVE_KILL not in [p.name for p in QUICK.plans()]
    plan = serve_plan(kills=2)
    assert (plan.serve, plan.worker_kills, plan.expect) == (True, 2, ("external SIGKILL",))
    argv = serve_service().argv
    assert argv[1:3] == ("-m", "services.serve") and "--queue" in argv


@pytest.mark.parametrize(("worker", "pid"), [
    ("vm-4242", 4242), ("vm-4242-cpu", 4242), ("box-7-4242-cpu", 4242), ("nopid", -1),
    ("vm-cpu", -1)])
def test_the_pid_is_read_from_a_worker_id_alone_or_inside_serve(worker: str, pid: int) -> None:
    assert _pid(worker) == pid
