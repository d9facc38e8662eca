"""``headwater submit``'s input checks, before anything is sent."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from ops.cli.app import app

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "stdlib_search" / "workflow.yaml"
runner = CliRunner()


def test_a_missing_input_file_is_a_usage_error_not_a_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "nofile.json"
    result = runner.invoke(app, ["submit", str(EXAMPLE), "--input", f"@{missing}"])
    assert result.exit_code == 2, result.output
    assert "cannot read --input file" in result.output and "No such file" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_input_that_is_not_json_is_a_usage_error() -> None:
    result = runner.invoke(app, ["submit", str(EXAMPLE), "--input", "{not json"])
    assert result.exit_code == 2
    assert "--input is not JSON" in result.output


def test_input_with_a_trailing_comma_or_nan_says_so() -> None:
    """Read as the gateway reads JSON: the fault named, and NaN is not a number."""
    result = runner.invoke(app, ["submit", str(EXAMPLE), "--input", '{"start": 0,}'],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "trailing comma is not allowed" in result.output, result.output
    result = runner.invoke(app, ["submit", str(EXAMPLE), "--input", '{"x": NaN}'])
    assert result.exit_code == 2 and "--input is not JSON" in result.output, result.output
