"""The rebuild's entry point and pure parts (the SQL runs in ``tests/e2e/test_audit_tools.py``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from services.projector import rebuild as rb
from services.projector.compare import DIFFERENT, ONLY_LIVE, RowDifference, ident


def test_identifiers_are_quoted() -> None:
    assert ident("rebuild_1") == '"rebuild_1"'
    assert ident('a"b') == '"a""b"'


def test_row_differences_name_the_row_and_the_columns() -> None:
    changed = RowDifference("tasks", ("wf-1", "m[1]"), DIFFERENT,
                            (("status", "failed", "succeeded"), ("seq", 7, 7)))
    assert changed.describe() == ("tasks wf-1/m[1]: status: live 'failed', rebuilt "
                                  "'succeeded'; seq: live 7, rebuilt 7")
    gone = RowDifference("workflows", ("wf-2",), ONLY_LIVE)
    assert gone.describe() == "workflows wf-2: only in the live tables"
    assert gone.to_json()["key"] == ["wf-2"] and changed.to_json()["columns"][0] == {
        "column": "status", "live": "failed", "rebuilt": "succeeded"}


def test_marks_stay_within_the_log_and_never_go_back() -> None:
    assert rb._bounded({0: 5, 1: 99}, {0: 10, 1: 20, 2: 3}) == {0: 5, 1: 20, 2: 3}
    assert rb._at_least({0: 4, 1: 9}, {0: 5}) == {0: 5, 1: 9}


def fake_rebuild(result: rb.RebuildResult | Exception) -> Any:
    async def run(settings: Any, check: bool, keep: bool, force: bool,
                  say: Any) -> rb.RebuildResult:
        if isinstance(result, Exception):
            raise result
        return result
    return run


def test_a_check_with_differences_exits_1_and_names_them(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    diff = RowDifference("tasks", ("wf-1", "a"), DIFFERENT, (("status", "x", "y"),))
    monkeypatch.setattr(rb, "rebuild", fake_rebuild(rb.RebuildResult("rebuild_1", "public", 12,
                                                               [diff])))
    assert rb.main(["--check"]) == rb.EXIT_DIFFERENT
    out = capsys.readouterr().out
    assert "differs: tasks wf-1/a: status: live 'x', rebuilt 'y'" in out
    assert "1 difference(s) between the live tables and a copy rebuilt from 12 events" in out
    assert rb.main(["--check", "--json"]) == rb.EXIT_DIFFERENT
    doc = json.loads(capsys.readouterr().out)
    assert doc["events"] == 12 and doc["differences"][0]["table"] == "tasks"


def test_a_rebuild_exits_0_refusals_2_and_outages_3(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(rb, "rebuild", fake_rebuild(rb.RebuildResult("rebuild_1", "public", 3,
                                                               swapped=True)))
    assert rb.main([]) == 0
    assert "rebuilt the projection in schema public from 3 events" in capsys.readouterr().out
    monkeypatch.setattr(rb, "rebuild", fake_rebuild(rb.Refused("no topic")))
    assert rb.main([]) == rb.EXIT_REFUSED
    assert "refused: no topic (--force" in capsys.readouterr().err
    monkeypatch.setattr(rb, "rebuild", fake_rebuild(OSError("refused")))
    assert rb.main(["--check"]) == rb.EXIT_UNREACHABLE
