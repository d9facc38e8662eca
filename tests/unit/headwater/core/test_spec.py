"""Spec parsing and validation: every fault is reported, by name, in one pass."""

from __future__ import annotations

import sys
import tracemalloc
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from headwater.core.graph import find_cycle, upstream_among
from headwater.core.retry import RetryPolicy
from headwater.core.spec import NodeKind, NodeSpec, load_spec_text, parse_spec
from headwater.errors import SpecError

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "stdlib_search" / "workflow.yaml"


def node(node_id: str, *needs: str, **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "task": f"t.{node_id}", "needs": list(needs), **extra}


def doc(*nodes: Any, **top: Any) -> dict[str, Any]:
    return {"name": "wf", "nodes": list(nodes), **top}


def faults_of(document: Any) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_spec(document)
    assert str(info.value) == "; ".join(info.value.faults)
    return info.value.faults


def chain(n: int) -> dict[str, Any]:
    return doc(node("n0"), *(node(f"n{i}", f"n{i - 1}") for i in range(1, n)))


@pytest.fixture
def low_recursion_limit() -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def assert_cycle(fault: str, needs: dict[str, list[str]]) -> list[str]:
    """``fault`` is ``"cycle: x -> y -> ... -> x"`` and each step is a real edge."""
    assert fault.startswith("cycle: ")
    path = fault.removeprefix("cycle: ").split(" -> ")
    assert len(path) >= 3 and path[0] == path[-1]
    assert len(set(path[:-1])) == len(path) - 1
    for before, after in pairwise(path):
        assert before in needs[after], f"{after} does not need {before}"
    return path


# -- the faults, one at a time ---------------------------------------------------------

FAULT_TABLE: list[tuple[str, dict[str, Any], str]] = [
    ("unknown dependency", doc(node("a", "zzz")), "node 'a': needs unknown node 'zzz'"),
    ("duplicate id", doc(node("a"), node("a")), "nodes[1]: duplicate node id 'a'"),
    ("unknown reference", doc(node("a", input={"x": "${nodes.zzz.output}"})),
     "node 'a': input: ${nodes.zzz.output}: unknown reference to node 'zzz'"),
    ("reference not upstream", doc(node("a"), node("b", input="${nodes.a.output.k}")),
     "node 'b': input: ${nodes.a.output.k}: node 'a' is not upstream: add 'a' to the needs "
     "of node 'b'"),
    ("sibling not upstream",
     doc(node("a"), node("b", "a"), node("c", "a", input=["${nodes.b.output}"])),
     "node 'c': input: ${nodes.b.output}: node 'b' is not upstream"),
    ("downstream not upstream",
     doc(node("a", input="${nodes.b.output}"), node("b", "a")), "node 'b' is not upstream"),
    ("unknown node field", doc(node("a", colour="red")), "node 'a': unknown field 'colour'"),
    ("map without over", doc(node("m", kind="map")),
     "node 'm': a map needs 'over', a reference to a list"),
    ("${item} outside a map", doc(node("a", input={"x": "${item}"})),
     "node 'a': input: ${item}: ${item} is only defined in a map node's input"),
    ("${index} outside a map", doc(node("a", input=["${index}"])),
     "${index} is only defined in a map node's input"),
    ("${item} in a map's over", doc(node("m", kind="map", over="${item}")),
     "node 'm': over: ${item}: ${item} is only defined"),
    ("unknown reference root", doc(node("a", input="${env.HOME}")), "unknown reference root 'env'"),
    ("reference without output", doc(node("a"), node("b", "a", input="${nodes.a}")),
     "expected ${nodes.<id>.output...}"),
    ("reference inside a longer string", doc(node("a", input="id-${input.x}")),
     "malformed reference"),
    ("bad output reference", doc(node("a"), output="${nodes.q.output}"),
     "output: ${nodes.q.output}: unknown reference to node 'q'"),
    ("needs itself", doc(node("a", "a")), "node 'a': needs itself"),
    ("needs not a list", doc(node("a", needs="b")), "needs must be a list of node ids"),
    ("bad id", doc({"id": "1bad", "task": "t"}), "nodes[0]: id must match"),
    ("node not a mapping", doc("a"), "nodes[0]: must be a mapping"),
    ("missing task", doc({"id": "a"}), "node 'a': task: required"),
    ("bad kind", doc(node("a", kind="cron")), "node 'a': kind must be one of"),
    ("bad queue", doc(node("a", queue="gpu pool")), "node 'a': queue must match"),
    ("over on a task", doc(node("a", over="${input.x}")), "belong to map nodes"),
    ("max_concurrency 0", doc(node("m", kind="map", over="${input}", max_concurrency=0)),
     "max_concurrency must be a positive integer"),
    ("max_concurrency bool", doc(node("m", kind="map", over="${input}", max_concurrency=True)),
     "max_concurrency must be a positive integer"),
    ("timeout 0", doc(node("a", timeout=0)), "timeout must be a positive number of seconds"),
    ("timeout true", doc(node("a", timeout=True)), "timeout must be a positive number of seconds"),
    ("timeout NaN", doc(node("a", timeout=float("nan"))), "timeout must be a positive number"),
    ("timeout infinite", doc(node("a", timeout=float("inf"))), "timeout must be a positive"),
    ("timeout beyond 30 days", doc(node("a", timeout=1e9)), "at most 2592000"),
    ("heartbeat_timeout below 1 s", doc(node("a", heartbeat_timeout=0.001)),
     "heartbeat_timeout must be at least 1 s"),
    ("flow heartbeat_timeout below 1 s", doc(node("a"), heartbeat_timeout=0.5),
     "heartbeat_timeout must be at least 1 s"),
    ("on_error to an unknown node", doc(node("a", on_error="h")),
     "on_error names unknown node 'h'"),
    ("on_error to itself", doc(node("a", on_error="a")), "on_error names itself"),
    ("two nodes share a handler", doc(node("a", on_error="h"), node("b", on_error="h"),
                                      node("h")), "error route of both 'a' and 'b'"),
    ("a handler with needs", doc(node("a", on_error="h"), node("b"), node("h", "b")),
     "an error handler (on_error of 'a') cannot have needs"),
    ("on_error and continue_on_error", doc(node("a", on_error="h", continue_on_error=True),
                                           node("h")), "exclude each other"),
    ("continue_on_error not a bool", doc(node("a", continue_on_error="yes")),
     "continue_on_error must be true or false"),
    ("a route cycle", doc(node("a", "h", on_error="h"), node("h")), "cycle"),
    ("${error} outside a handler", doc(node("a", input="${error}")),
     "${error} is only defined in the input of an error handler"),
    ("${error} with an unknown key", doc(node("a", on_error="h"),
                                         node("h", input="${error.nope}")),
     "an error has the keys node, index, attempts, type, message, not 'nope'"),
    ("map over a literal", doc(node("m", kind="map", over="notaref")),
     "a map needs 'over', a reference to a list"),
    ("too many nodes", doc(*(node(f"n{i}") for i in range(10_001))), "at most 10000 nodes"),
    ("no name", {"nodes": [node("a")]}, "name: required"),
    ("empty nodes", {"name": "x", "nodes": []}, "nodes: required, a non-empty list"),
    ("retry max_attempts 0", doc(node("a", retry={"max_attempts": 0})),
     "node 'a': retry: max_attempts must be an integer in 1..1000000"),
    ("retry max_attempts float", doc(node("a", retry={"max_attempts": 2.5})), "max_attempts"),
    ("retry max_attempts bool", doc(node("a", retry={"max_attempts": True})), "max_attempts"),
    ("retry max_attempts too big", doc(node("a"), retry={"max_attempts": 1_000_001}),
     "retry: max_attempts must be an integer in 1..1000000"),
    ("retry negative base", doc(node("a", retry={"backoff_base": -1})),
     "backoff_base must be a finite non-negative number"),
    ("retry string multiplier", doc(node("a", retry={"multiplier": "2"})),
     "multiplier must be a finite non-negative number"),
    ("retry jitter above 1", doc(node("a", retry={"jitter": 1.5})), "jitter must be within [0, 1]"),
    ("retry max below base", doc(node("a", retry={"backoff_base": 10, "backoff_max": 5})),
     "backoff_max must be >= backoff_base"),
    ("retry unknown field", doc(node("a", retry={"attempts": 3})),
     "node 'a': retry: unknown field 'attempts'"),
    ("retry not a mapping", doc(node("a", retry=3)), "node 'a': retry: must be a mapping"),
]


@pytest.mark.parametrize(("label", "document", "expected"), FAULT_TABLE,
                         ids=[row[0] for row in FAULT_TABLE])
def test_each_fault_is_named(label: str, document: dict[str, Any], expected: str) -> None:
    faults = faults_of(document)
    assert any(expected in f for f in faults), f"{label}: {expected!r} not in {faults}"


@pytest.mark.parametrize("document", [None, "name: x", ["a"], 3])
def test_a_non_mapping_spec_is_one_fault(document: Any) -> None:
    assert faults_of(document) == ["spec must be a mapping with 'name' and 'nodes'"]


def test_cycle_is_reported_with_its_path() -> None:
    document = doc(node("root"), node("a", "root", "c"), node("b", "a"), node("c", "b"),
                   node("tail", "c"))
    (fault,) = faults_of(document)
    path = assert_cycle(fault, {n["id"]: n["needs"] for n in document["nodes"]})
    assert set(path) == {"a", "b", "c"}


def test_two_node_cycle() -> None:
    (fault,) = faults_of(doc(node("a", "b"), node("b", "a")))
    assert_cycle(fault, {"a": ["b"], "b": ["a"]})


def test_several_faults_are_all_reported() -> None:
    document = doc(
        node("a", "ghost", colour="red", retry={"max_attempts": 0, "jitter": 3}),
        node("a"),
        node("b", "a", input={"x": "${nodes.nope.output}", "y": "${item}"}),
        node("m", kind="map"),
    )
    faults = faults_of(document)
    for expected in ("unknown field 'colour'", "max_attempts must be", "jitter must be",
                     "duplicate node id 'a'", "needs unknown node 'ghost'",
                     "unknown reference to node 'nope'", "${item} is only defined",
                     "a map needs 'over'"):
        assert any(expected in f for f in faults), f"{expected!r} not in {faults}"
    assert len(faults) == 8


def test_references_are_checked_even_when_there_is_a_cycle() -> None:
    faults = faults_of(doc(node("a", "b", input="${nodes.z.output}"), node("b", "a")))
    assert [f.split(":")[0] for f in faults] == ["cycle", "node 'a'"]
    assert "unknown reference to node 'z'" in faults[1]


def test_10000_node_chain_validates_without_recursion(low_recursion_limit: None) -> None:
    parsed = parse_spec(chain(10_000))
    assert len(parsed.nodes) == 10_000
    assert parsed.node("n9999").needs == ("n9998",)


def test_10000_node_chain_with_a_cycle_back_to_the_start(low_recursion_limit: None) -> None:
    document = chain(10_000)
    document["nodes"][0]["needs"] = ["n9999"]
    (fault,) = faults_of(document)
    path = assert_cycle(fault, {n["id"]: n["needs"] for n in document["nodes"]})
    assert len(path) == 10_001


def test_chain_validation_memory_is_not_quadratic() -> None:
    document = chain(2_000)
    tracemalloc.start()
    try:
        parse_spec(document)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.0f} MB"


def test_self_dependency_with_a_reference_is_a_spec_error() -> None:
    faults = faults_of(doc(node("a"), node("b", "a", "b", input="${nodes.a.output}")))
    assert any("needs itself" in f for f in faults)


def test_non_string_node_keys_from_yaml_are_a_spec_error() -> None:
    faults = faults_of(load_spec_text("name: x\nnodes:\n  - {id: a, task: t, 1: x, foo: y}\n"))
    assert any("unknown field" in f for f in faults)


def test_unknown_top_level_field_is_a_fault() -> None:
    faults = faults_of(doc(node("a"), ouput="${nodes.a.output}"))
    assert any("ouput" in f for f in faults)


# -- what a valid spec becomes ----------------------------------------------------------


def test_example_workflow_parses() -> None:
    parsed = parse_spec(load_spec_text(EXAMPLE.read_text()))
    assert parsed.name == "stdlib-search"
    assert [n.id for n in parsed.nodes] == ["list_modules", "extract", "search", "stats", "report"]
    extract = parsed.node("extract")
    assert extract.kind is NodeKind.MAP
    assert extract.over == "${nodes.list_modules.output}"
    assert extract.retry == RetryPolicy(3, 0.5, 10.0, 2.0, 0.2)  # the workflow default
    assert parsed.node("report").needs == ("search", "stats")
    assert parsed.output == "${nodes.report.output}"
    assert parsed.dependents()["extract"] == ["search", "stats"]


def test_defaults_and_overrides() -> None:
    parsed = parse_spec(doc(
        node("a", queue="gpu", timeout=30, retry={"max_attempts": 4}),
        node("b", "a", "a"),
        node("m", "a", kind="map", over="${nodes.a.output}", max_concurrency=3,
             input={"x": "${item}", "i": "${index}", "a": "${nodes.a.output.k}"}),
        retry={"backoff_base": 2, "backoff_max": 20},
    ))
    a, b, m = parsed.nodes
    assert (a.queue, a.timeout, a.kind) == ("gpu", 30.0, NodeKind.TASK)
    assert a.retry == RetryPolicy(4, 2.0, 20.0, 2.0, 0.0)
    assert (b.queue, b.timeout, b.needs) == ("cpu", None, ("a",))
    assert b.retry == RetryPolicy(1, 2.0, 20.0, 2.0, 0.0)
    assert (m.max_concurrency, m.over) == (3, "${nodes.a.output}")
    with pytest.raises(KeyError):
        parsed.node("zzz")


def test_load_spec_text_reports_bad_yaml() -> None:
    with pytest.raises(SpecError) as info:
        load_spec_text("nodes: [unclosed")
    assert info.value.faults[0].startswith("not valid YAML/JSON")
    assert load_spec_text('{"name": "j", "nodes": []}') == {"name": "j", "nodes": []}


# -- graph helpers ----------------------------------------------------------------------


def specs(edges: dict[str, list[str]]) -> list[NodeSpec]:
    return [NodeSpec(id=k, kind=NodeKind.TASK, task="t", needs=tuple(v)) for k, v in edges.items()]


def test_find_cycle_on_acyclic_graphs_and_self_loops() -> None:
    assert find_cycle(specs({"a": [], "b": ["a"], "c": ["a", "b"]})) is None
    assert find_cycle(specs({"a": ["a"]})) is None  # reported as "needs itself" instead
    assert find_cycle(specs({"a": ["ghost"]})) is None
    assert find_cycle([]) is None


def test_find_cycle_returns_a_closed_path_of_real_edges() -> None:
    edges = {"a": ["d"], "b": ["a"], "c": ["b"], "d": ["c"], "e": ["d"]}
    cycle = find_cycle(specs(edges))
    assert cycle is not None
    assert_cycle("cycle: " + " -> ".join(cycle), edges)
    assert set(cycle) == {"a", "b", "c", "d"}


def test_upstream_among() -> None:
    nodes = specs({"d": ["b", "c"], "b": ["a"], "c": ["a"], "a": []})
    needs = {n.id: n.needs for n in nodes}
    assert upstream_among(needs, "d", {"a", "b", "c", "d"}) == {"a", "b", "c"}
    assert upstream_among(needs, "b", {"a", "c"}) == {"a"}
    assert upstream_among(needs, "a", {"b", "c", "d"}) == set()


def test_a_name_over_200_characters_is_a_fault() -> None:
    # The projection indexes the name; PostgreSQL refuses an index row over 2704 bytes.
    assert faults_of(doc(node("a"), name="n" * 3000)) == [
        "name: at most 200 characters, got 3000"]
    assert parse_spec(doc(node("a"), name="n" * 200)).name == "n" * 200
