"""``POST <path>`` of a ``@workflow`` (``runs.paths``): the route takes only a ``POST``
that no other route takes, and answers 404 for a path no definition claims and 409
naming the definitions when two do; any other route keeps its own answers."""

from __future__ import annotations

from typing import Any

from gateway_harness import FakePool, Gateway, assert_problem

from services.gateway.runs.paths import MAX_CLAIMS


class PathPool(FakePool):
    """Answers the path query with ``claims`` (the definitions serving the path)."""

    def __init__(self, claims: dict[str, list[str]]) -> None:
        super().__init__()
        self.claims = claims
        self.asked: list[tuple[Any, ...]] = []

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        if "jsonb_array_elements(d.spec->'nodes')" in sql:
            self.asked.append(args)
            return [{"name": n} for n in self.claims.get(args[0], [])][:args[2]]
        return await super().fetch(sql, *args)


def test_an_unclaimed_path_is_404_naming_it(gw: Gateway) -> None:
    gw.connect(PathPool({}))
    doc = assert_problem(gw.client.post("/research", json={"q": 1}), 404, "Not found")
    assert "/research" in doc["detail"] and doc["path"] == "/research"


def test_a_path_two_definitions_claim_is_409_naming_both(gw: Gateway) -> None:
    pool = PathPool({"/a/b": ["one", "two"], "/many": [f"w{i:02}" for i in range(20)]})
    gw.connect(pool)
    doc = assert_problem(gw.client.post("/a/b"), 409, "Conflict")
    assert doc["workflows"] == ["one", "two"] and "/a/b" in doc["detail"]
    assert pool.asked[0][:2] == ("/a/b", None)  # auth off: every tenant's definitions
    many = assert_problem(gw.client.post("/many"), 409)
    assert len(many["workflows"]) == MAX_CLAIMS


def test_other_routes_keep_their_answers(gw: Gateway) -> None:
    pool = PathPool({"/health": ["x"], "/v1/nothing": ["x"]})
    gw.connect(pool)
    assert gw.client.post("/health").status_code == 405  # GET only: not a workflow path
    assert_problem(gw.client.post("/v1/nothing"), 404)  # the API's own: never a path
    assert gw.client.get("/research").status_code == 404  # a POST only
    assert_problem(gw.client.post("/bad path!"), 404)  # not of a path's form
    assert pool.asked == []  # none of them asked for a workflow


def test_a_path_is_not_served_before_the_gateway_is_ready(gw: Gateway) -> None:
    assert_problem(gw.client.post("/research"), 503)
