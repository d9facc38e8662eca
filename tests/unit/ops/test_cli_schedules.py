"""``headwater schedules apply``'s file checks, before anything is sent, and the body it
sends (the gateway names any other fault)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import standin_gateway
from typer.testing import CliRunner

from ops.cli.app import app

runner = CliRunner()


@pytest.mark.parametrize(("text", "message"), [
    ("- a\n- b\n", "holds no mapping"),
    ("cron: '* * * * *'\ndefinition: d\n", "has no name"),
    ("cron: [\n", "cannot read"),
])
def test_a_file_without_a_schedule_is_a_usage_error(tmp_path: Path, text: str,
                                                    message: str) -> None:
    file = tmp_path / "s.yaml"
    file.write_text(text)
    result = runner.invoke(app, ["schedules", "apply", str(file), "--gateway",
                                 "http://127.0.0.1:9"])
    assert result.exit_code == 2, result.output
    assert message in result.output


@pytest.fixture
def gateway() -> Iterator[tuple[str, list[tuple[str, Any]]]]:
    """A gateway answering every ``PUT`` with generation 1; records ``(path, body)``."""
    seen: list[tuple[str, Any]] = []

    def answer(method: str, path: str, body: Any) -> tuple[int, Any]:
        seen.append((path, body))
        return 201, {"name": "n", "generation": 1, "workflow_id": "schedule:n:1",
                     "created": True}

    with standin_gateway.serve(answer) as url:
        yield url, seen


def test_apply_sends_the_body_without_its_name(tmp_path: Path, gateway: Any) -> None:
    url, seen = gateway
    file = tmp_path / "s.yaml"
    file.write_text("name: nightly\ncron: '0 2 * * *'\ndefinition: billing\n"
                    "start_at: 2026-12-24T00:00:00Z\ninput: {n: 1}\n")
    result = runner.invoke(app, ["schedules", "apply", str(file), "--gateway", url])
    assert result.exit_code == 0, result.output
    assert "created generation 1" in result.output
    assert seen == [("/v1/schedules/nightly", {
        "cron": "0 2 * * *", "definition": "billing", "input": {"n": 1},
        "start_at": "2026-12-24T00:00:00+00:00"})]
