"""The replay comparison (``ops.expected_rows``) expects a run's definition in its
``workflows`` row, and tells a row that lost it (or names another) apart."""

from __future__ import annotations

import dataclasses
from typing import Any

from machine_harness import T0, WF, run, spec, task

from headwater.core import events as ev
from ops.expected_rows import ProjectionRows, diff_rows, expected_rows
from ops.history import fold


def _rows(**definition: Any) -> ProjectionRows:
    history = run([ev.WorkflowSubmitted(WF, spec(task("a")), None, T0, **definition)]).history
    return expected_rows(fold(history).state, history)


def test_a_run_of_a_definition_expects_it_in_its_row() -> None:
    rows = _rows(definition="billing", definition_version=2)
    assert rows.workflow is not None
    assert rows.workflow["definition"] == {"name": "billing", "version": 2}
    lost = dataclasses.replace(rows, workflow={k: v for k, v in rows.workflow.items()
                                               if k != "definition"})
    assert [d[0] for d in diff_rows(rows, lost)] == ["workflows.definition"]
    other = dataclasses.replace(rows, workflow={
        **rows.workflow, "definition": {"name": "billing", "version": 3}})
    assert [d[0] for d in diff_rows(rows, other)] == ["workflows.definition.version"]


def test_an_inline_run_expects_no_definition() -> None:
    rows = _rows()
    assert rows.workflow is not None and "definition" not in rows.workflow
