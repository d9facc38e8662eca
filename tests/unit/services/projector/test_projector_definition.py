"""The projection records a run's definition from its ``WorkflowAccepted``
(``statements.core_plan``), and the schema has the columns and the indexes of the
listing's filters (``services/common/db.py``)."""

from __future__ import annotations

import re

from headwater.core import events as ev
from services.common.schema import SCHEMA
from services.projector.statements import UPSERT_ACCEPTED, core_plan

SPEC = {"name": "billing-run", "nodes": [{"id": "a", "task": "t.a"}]}


def _accepted_args(body: ev.WorkflowAccepted) -> tuple[object, ...]:
    (args,) = [a for sql, a in core_plan(ev.HistoryEvent("wf", 1, body)) if sql == UPSERT_ACCEPTED]
    return args


def test_the_acceptance_writes_the_definition_columns() -> None:
    args = _accepted_args(ev.WorkflowAccepted("wf", 5, SPEC, None, "team",
                                              definition="billing", definition_version=3))
    assert args[-4:-2] == ("billing", 3)
    assert "definition = excluded.definition" in UPSERT_ACCEPTED
    assert "definition_version = excluded.definition_version" in UPSERT_ACCEPTED


def test_an_inline_run_writes_nulls() -> None:
    assert _accepted_args(ev.WorkflowAccepted("wf", 5, SPEC, None))[-4:] == (
        None, None, None, None)


def test_a_reruns_acceptance_writes_its_rerun_document() -> None:
    rerun = {"of": "wf-old", "reset": None, "nodes": {"a": 1}, "items": {}}
    args = _accepted_args(ev.WorkflowAccepted("wf", 5, SPEC, None, rerun=rerun))
    assert args[-2] == rerun and "rerun = excluded.rerun" in UPSERT_ACCEPTED


def test_the_acceptance_writes_the_specs_labels() -> None:
    args = _accepted_args(ev.WorkflowAccepted("wf", 5, {**SPEC, "labels": {"team": "a"}},
                                              None))
    assert args[-1] == {"team": "a"} and "labels = excluded.labels" in UPSERT_ACCEPTED
    assert "using gin (labels)" in SCHEMA and "add column labels jsonb" in SCHEMA


def test_every_listing_filter_has_an_index_in_the_listings_order() -> None:
    indexed = {m[1]: m[2] for m in re.finditer(
        r"create index if not exists (\w+) on workflows \((\w+), created_at desc,\s+"
        r"workflow_id desc\)", SCHEMA)}
    assert {"definition", "status", "name", "tenant"} <= set(indexed.values())
    assert "workflows_list on workflows (created_at desc, workflow_id desc)" in SCHEMA
    assert "add column definition text" in SCHEMA
    assert "add column definition_version integer" in SCHEMA
