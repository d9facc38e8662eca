"""How long an operation's gateway may go without writing before another takes the
operation over: ``HEADWATER_OPERATIONS_LEASE_S``, 30 s unless told, above 0 or the
gateway refuses to start; and the fault point between a batch's actions and its record
is one ``HEADWATER_FAULTS`` takes."""

from __future__ import annotations

import pytest

from services.common import faults
from services.gateway.settings import Settings


def test_the_lease_is_a_setting_above_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEADWATER_OPERATIONS_LEASE_S", raising=False)
    assert Settings.from_env().operations_lease_s == 30.0
    monkeypatch.setenv("HEADWATER_OPERATIONS_LEASE_S", "6")
    assert Settings.from_env().operations_lease_s == 6.0
    for bad in ("0", "-1", "soon"):
        monkeypatch.setenv("HEADWATER_OPERATIONS_LEASE_S", bad)
        with pytest.raises(ValueError, match="HEADWATER_OPERATIONS_LEASE_S"):
            Settings.from_env()


def test_the_point_between_a_batch_and_its_record_can_be_armed() -> None:
    assert faults.parse("gateway.operation_acted=2:stop") == {
        "gateway.operation_acted": (2, "stop")}
