"""The local stack keeps its auth as started: ``restart`` and ``up`` take the
``HEADWATER_AUTH*`` and ``HEADWATER_TOKEN`` the coordinator was last started with, not
what the shell holds meanwhile (a tenant's token for the CLI's own requests), unless
the shell sets ``HEADWATER_AUTH`` to another value; and a launch record, which may hold
the token, is readable by its owner alone."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from ops import localstack
from ops.cli.stack import auth_env
from ops.preflight import preflight

STARTED = {"HEADWATER_AUTH": "on", "HEADWATER_AUTH_KEYS_FILE": "/keys",
           "HEADWATER_TOKEN": "hwk_service"}


def _record(home: Path, env: dict[str, str]) -> None:
    """A launch record of the coordinator, as ``localstack.start`` writes it."""
    (home / "run").mkdir(exist_ok=True)
    (home / "run" / "coordinator.launch.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "services.coordinator"],
        "env": {"PYTHONPATH": ".", **env}, "metrics_port": None}))


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A shell without auth settings."""
    for name in ("HEADWATER_AUTH", "HEADWATER_AUTH_KEYS_FILE", "HEADWATER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_a_stack_started_with_auth_keeps_it_from_a_plain_shell(
        home: Path, shell: pytest.MonkeyPatch) -> None:
    _record(home, STARTED)
    assert auth_env() == STARTED
    shell.setenv("HEADWATER_TOKEN", "hwk_a_tenants_own")  # the CLI's token, not the stack's
    assert auth_env() == STARTED


def test_setting_headwater_auth_in_the_shell_changes_it(
        home: Path, shell: pytest.MonkeyPatch) -> None:
    _record(home, STARTED)
    shell.setenv("HEADWATER_AUTH", "off")
    assert auth_env() == {"HEADWATER_AUTH": "off"}


def test_a_new_stack_takes_the_shells(home: Path, shell: pytest.MonkeyPatch) -> None:
    assert auth_env() == {}
    shell.setenv("HEADWATER_AUTH", "on")
    shell.setenv("HEADWATER_TOKEN", "hwk_service")
    assert auth_env() == {"HEADWATER_AUTH": "on", "HEADWATER_TOKEN": "hwk_service"}


def test_a_launch_record_is_its_owners_alone(home: Path) -> None:
    service = localstack.Service("sleeper", (sys.executable, "-c", "import time; time.sleep(30)"))
    localstack.start(service, {"HEADWATER_TOKEN": "hwk_service"})
    assert stat.S_IMODE(service.launch_file.stat().st_mode) == 0o600


def test_preflight_reads_the_coordinators_settings(home: Path, shell: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text("")
    coordinator = localstack.Service("coordinator", (sys.executable, "-m",
                                                     "services.coordinator"))
    failures = preflight([(coordinator, {"HEADWATER_AUTH": "on",
                                         "HEADWATER_AUTH_KEYS_FILE": str(keys)})])
    assert "HEADWATER_TOKEN" in failures["coordinator"], failures
