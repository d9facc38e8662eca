"""What a principal sees and touches (``services.gateway.auth.scope``): a list's tenant filter,
a submission's tenant (filled in; another is 403; a principal of every tenant's is left
as it is), and ``require_run`` (another tenant's run is 404, as an unknown id)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from services.common.auth.tokens import OPEN, Principal
from services.gateway.auth.scope import list_tenant, not_found, principal, require_run, submission
from services.gateway.edge.problems import Problem
from services.gateway.runs.models import SubmitRequest

A = Principal("A", "submit", "ka")
EVERY = Principal("*", "submit", "ops")
SPEC = {"name": "one", "nodes": [{"id": "a", "task": "t.a"}]}


class Pool:
    """Answers ``select tenant from workflows`` from ``tenants`` (workflow id -> tenant);
    records each query."""

    def __init__(self, tenants: dict[str, str | None]) -> None:
        self.tenants = tenants
        self.asked: list[tuple[str, tuple[Any, ...]]] = []

    async def fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        self.asked.append((sql, args))
        if args[0] not in self.tenants:
            return None
        return {"tenant": self.tenants[args[0]]}


# list_tenant


@pytest.mark.parametrize("asked", [None, "A", "B"])
def test_every_tenant_lists_what_it_asks_for(asked: str | None) -> None:
    assert list_tenant(EVERY, asked) == (asked, False)
    assert list_tenant(OPEN, asked) == (asked, False)


@pytest.mark.parametrize(("asked", "empty"), [(None, False), ("A", False), ("B", True),
                                              ("*", True), ("a", True)])
def test_a_tenant_lists_its_own_only(asked: str | None, empty: bool) -> None:
    assert list_tenant(A, asked) == ("A", empty)


# submission


def test_a_submission_without_a_tenant_gets_the_principal_s() -> None:
    request = SubmitRequest(id="wf-1", workflow=SPEC, input={"x": 1})
    mine = submission(A, request)
    assert mine.tenant == "A"
    assert mine.model_dump(exclude={"tenant"}) == request.model_dump(exclude={"tenant"})
    assert request.tenant is None  # a copy: the request is unchanged


def test_a_submission_naming_the_principal_s_tenant_is_taken() -> None:
    request = SubmitRequest(workflow=SPEC, tenant="A")
    assert submission(A, request) is request


@pytest.mark.parametrize("other", ["B", "a", "*", ""])
def test_a_submission_naming_another_tenant_is_403(other: str) -> None:
    with pytest.raises(Problem) as e:
        submission(A, SubmitRequest(workflow=SPEC, tenant=other))
    problem = e.value
    assert (problem.status, problem.title) == (403, "Forbidden")
    assert problem.detail == f"the token is for tenant 'A'; the body names {other!r}"
    assert problem.extra == {"role": "submit", "needs": "tenant A"}


@pytest.mark.parametrize("tenant", [None, "A", "B"])
def test_every_tenant_s_submission_is_left_as_it_is(tenant: str | None) -> None:
    request = SubmitRequest(workflow=SPEC, tenant=tenant)
    assert submission(EVERY, request) is request
    assert submission(OPEN, request) is request


# require_run


async def test_every_tenant_is_not_asked_about() -> None:
    pool = Pool({"wf-b": "B"})
    await require_run(pool, EVERY, "wf-b")
    await require_run(pool, OPEN, "unknown")
    assert pool.asked == []


async def test_a_tenant_s_own_run_passes() -> None:
    pool = Pool({"wf-a": "A"})
    await require_run(pool, A, "wf-a")
    assert pool.asked == [("select tenant from workflows where workflow_id = $1", ("wf-a",))]


@pytest.mark.parametrize(("workflow_id", "tenant"), [
    ("wf-b", "B"), ("wf-shared", None), ("wf-every", "*"), ("wf-lower", "a"),
    ("unknown", "-")])
async def test_another_tenant_s_run_is_404_like_an_unknown_one(
        workflow_id: str, tenant: str | None) -> None:
    pool = Pool({} if workflow_id == "unknown" else {workflow_id: tenant})
    with pytest.raises(Problem) as e:
        await require_run(pool, A, workflow_id)
    expected = not_found(workflow_id)
    assert (e.value.status, e.value.title, e.value.detail) == (
        expected.status, expected.title, expected.detail)
    assert (e.value.status, e.value.detail) == (404, f"no workflow {workflow_id}")
    assert "B" not in e.value.detail.replace("wf-b", "")  # never whose


# principal


def test_the_request_s_principal_or_401() -> None:
    def request(**state: Any) -> Any:
        return SimpleNamespace(state=SimpleNamespace(**state))

    assert principal(request(principal=A)) is A
    assert principal(request(principal=OPEN)) is OPEN
    for unset in (request(), request(principal=None), request(principal="A")):
        with pytest.raises(Problem) as refused:  # fail closed
            principal(unset)
        assert refused.value.status == 401


@pytest.mark.parametrize("wid", ["p:c:1", "p:c.4:12", "schedule:n:2", "schedule:n:2:fire.0:1",
                                 "a:b:c:d:1"])
@pytest.mark.parametrize("me", [A, EVERY, OPEN], ids=["tenant", "every-tenant", "auth-off"])
def test_nobody_submits_under_a_child_workflows_id(wid: str, me: Principal) -> None:
    """The coordinator gives such an id to a child it starts (or a schedule's run) at
    any moment: a client's claim of it in PostgreSQL would win there and lose in the
    coordinator, which drops the client's run after a 202."""
    with pytest.raises(Problem) as refused:
        submission(me, SubmitRequest(id=wid, workflow={"name": "x", "nodes": []}))
    assert refused.value.status == 422 and "child workflows it starts" in refused.value.detail


@pytest.mark.parametrize("wid", ["p:node.3:call.0", "call-" + "0" * 40, "a:b"])
def test_a_tenant_may_not_submit_under_a_derived_id(wid: str) -> None:
    with pytest.raises(Problem) as refused:
        submission(A, SubmitRequest(id=wid, workflow={"name": "x", "nodes": []}))
    assert refused.value.status == 403 and "form of the ids" in refused.value.detail
    mine = submission(A, SubmitRequest(id="order-17.retry_2", workflow={"name": "x",
                                                                         "nodes": []}))
    assert mine.tenant == "A"
    star = Principal("*", "submit", "svc")
    assert submission(star, SubmitRequest(id=wid, workflow={"name": "x", "nodes": []})).id == wid


def test_a_submission_for_a_tenant_resolves_as_that_tenant() -> None:
    from services.gateway.runs.submit import viewer

    star = Principal("*", "submit", "worker")
    assert viewer(star, "acme") == Principal("acme", "submit", "worker")
    assert viewer(star, None) is star
    assert viewer(A, "A") is A
    assert viewer(OPEN, "acme") is OPEN  # auth off: everything, as before tenants
