"""A workflow id another tenant's run holds (``headwater.core.idempotency.conflict``):
the resubmission is a conflict whose reason says only that the run is another tenant's,
never whose, and changes nothing."""

from __future__ import annotations

import pytest
from machine_harness import run, spec, task

from headwater.core import events as ev
from headwater.core.idempotency import conflict

DOC = spec(task("a"))
WF = "wf-tenant"
AT = 1_700_000_000_000
REASON = f"workflow id {WF} belongs to another tenant's run; the run is unchanged"


def submitted(tenant: str | None, inp: object = None) -> ev.WorkflowSubmitted:
    return ev.WorkflowSubmitted(WF, DOC, {"x": 1} if inp is None else inp, AT, tenant)


@pytest.mark.parametrize(("owner", "other"), [
    ("acme-corp", "beta-labs"), ("acme-corp", None), (None, "beta-labs"),
    ("acme-corp", "ACME-CORP"), ("acme-corp", "*")])
def test_another_tenant_s_resubmission_is_refused_without_naming_a_tenant(
        owner: str | None, other: str | None) -> None:
    state = run([submitted(owner)]).state
    assert state is not None and state.tenant == owner
    why = conflict(state, submitted(other))
    assert why == REASON
    for name in filter(None, (owner, other)):
        assert name not in why.replace(WF, "")


def test_another_tenant_s_other_body_gets_the_tenant_reason_not_the_hashes() -> None:
    """The body's hash would tell another tenant whether its guess of the body is right."""
    state = run([submitted("acme-corp")]).state
    why = conflict(state, submitted("beta-labs", {"x": 2}))
    assert why == REASON
    assert "sha256" not in why


def test_the_same_tenant_s_duplicate_is_no_conflict() -> None:
    state = run([submitted("acme-corp")]).state
    assert conflict(state, submitted("acme-corp")) is None
    other = conflict(state, submitted("acme-corp", {"x": 2}))
    assert other is not None and "already used by a different submission" in other


def test_the_refused_resubmission_changes_nothing() -> None:
    first = run([submitted("acme-corp")])
    state = first.state
    assert state is not None
    again = run([submitted("beta-labs", {"x": 9})], state)
    assert again.history == []
    assert again.state is not None
    assert (again.state.tenant, again.state.input, again.state.seq) == (
        "acme-corp", {"x": 1}, state.seq)


def test_a_child_of_another_tenant_under_the_same_link_gets_the_tenant_reason() -> None:
    link = ev.ChildSubmitted(WF, "parent", "n", None, 1, DOC, {"x": 1}, AT, "acme-corp")
    state = run([link]).state
    assert state is not None and state.tenant == "acme-corp"
    theirs = ev.ChildSubmitted(WF, "parent", "n", None, 1, DOC, {"x": 1}, AT, "beta-labs")
    assert conflict(state, theirs) == REASON
    assert conflict(state, link) is None
