"""State-machine tables: ``when`` conditions and the branches they skip.

The branch shape: classify -> refund (when label is "refund") -> refund_done, and
classify -> other (when it is not) -> other_done; join needs refund_done and other_done.
"""

from __future__ import annotations

from typing import Any

import golden_codec as gc
import pytest
from machine_harness import (
    Case,
    check_case,
    fail,
    has,
    map_node,
    ok,
    replay,
    run,
    spec,
    submit,
    task,
)

from headwater.blobs import make_ref
from headwater.core import events as ev

IS_REFUND = '${nodes.classify.output.label} == "refund"'
NOT_REFUND = '${nodes.classify.output.label} != "refund"'
BRANCHES = spec(
    task("classify"),
    task("refund", "classify", when=IS_REFUND),
    task("refund_done", "refund"),
    task("other", "classify", when=NOT_REFUND),
    task("other_done", "other", input="${nodes.other.output}"),
    task("join", "refund_done", "other_done",
         input={"r": "${nodes.refund_done.output}", "o": "${nodes.other_done.output}"}),
)
OTHER = {"label": "other"}
BIG = make_ref("sha256:" + "ab" * 32, 5_000_000)
"""An output as a worker reports one over the blob threshold (``headwater.blobs``)."""
TAKEN_OTHER: list[ev.Input] = [ok("classify", OTHER), ok("other", "O")]


def one(doc_when: str) -> dict[str, Any]:
    """A -> B with ``when`` on B, and C beside them."""
    return spec(task("a"), task("b", "a", when=doc_when), task("c"))


CASES = [
    Case("a false when skips its node and its only-dependents; the other branch starts",
         BRANCHES, given=[], when=ok("classify", OTHER),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "classify"}),
                 ("ConditionEvaluated", {"node": "refund", "value": False}),
                 ("NodeFinished", {"node": "refund", "status": "skipped",
                                   "error": f"when: {IS_REFUND} is false"}),
                 ("ConditionEvaluated", {"node": "other", "value": True}),
                 ("TaskDispatched", {"node": "other"}),
                 ("NodeFinished", {"node": "refund_done", "status": "skipped",
                                   "error": "needs refund, which was skipped by a false when"})],
         state={"nodes.refund.branch_skipped": True, "nodes.refund_done.branch_skipped": True,
                "nodes.other.branch_skipped": False, "nodes.join.status": "pending"}),
    Case("the join of a skipped branch and a taken one runs, seeing null for the skipped",
         BRANCHES, given=TAKEN_OTHER, when=ok("other_done", "OD"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "other_done"}),
                 ("TaskDispatched", {"node": "join", "input": {"r": None, "o": "OD"}})]),
    Case("... and the workflow succeeds with the branch skipped",
         BRANCHES, given=[*TAKEN_OTHER, ok("other_done", "OD")], when=ok("join", "J"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "join"}),
                 ("WorkflowSucceeded", {"output": {"join": "J"}})],
         state={"nodes.refund.status": "skipped", "nodes.refund_done.status": "skipped"}),
    Case("the other label takes the other branch",
         BRANCHES, given=[], when=ok("classify", {"label": "refund"}),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}),
                 ("ConditionEvaluated", {"node": "refund", "value": True}),
                 ("TaskDispatched", {"node": "refund"}),
                 ("ConditionEvaluated", {"node": "other", "value": False}),
                 ("NodeFinished", {"node": "other", "status": "skipped"}),
                 ("NodeFinished", {"node": "other_done", "status": "skipped"})]),
    Case("a join whose needs were all branch-skipped is branch-skipped too",
         spec(task("a"), task("x", "a", when="${nodes.a.output} > 1"),
              task("y", "a", when="${nodes.a.output} > 2"), task("j", "x", "y"), task("c")),
         given=[], when=ok("a", 0),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}),
                 ("ConditionEvaluated", {"value": False}), ("NodeFinished", {"node": "x"}),
                 ("ConditionEvaluated", {"value": False}), ("NodeFinished", {"node": "y"}),
                 ("NodeFinished", {"node": "j", "status": "skipped",
                                   "error": "needs x, y, which were skipped by a false when"})],
         state={"nodes.j.branch_skipped": True}),
    Case("a need skipped by a failure still skips a join (old rules)",
         spec(task("a"), task("x", "a", when="${nodes.a.output} > 1"),
              task("f", on_error="h"), task("g", "f"), task("h"), task("j", "x", "g")),
         given=[ok("a", 0)], when=fail("f", retryable=False),
         events=[("TaskFailed", {}), ("NodeFinished", {"node": "f", "status": "failed"}),
                 ("TaskDispatched", {"node": "h"}),
                 ("NodeFinished", {"node": "g", "status": "skipped"}),
                 ("NodeFinished", {"node": "j", "status": "skipped",
                                   "error": "needs g, which was skipped"})],
         state={"nodes.j.branch_skipped": False, "nodes.g.branch_skipped": False}),
    Case("a true when on a root node: it starts",
         spec(task("a", when="${input.go} and ${input.n} in [1, 2]"), task("c")),
         input={"go": True, "n": 2}, submit=False, given=[],
         when=submit(spec(task("a", when="${input.go} and ${input.n} in [1, 2]"), task("c")),
                     {"go": True, "n": 2}),
         events=[("WorkflowAccepted", {}), ("ConditionEvaluated", {"node": "a", "value": True}),
                 ("TaskDispatched", {"node": "a"}), ("TaskDispatched", {"node": "c"})]),
    Case("a when whose reference cannot be resolved fails its node, named",
         one("${nodes.a.output.label} == 'x'"), given=[], when=ok("a", {"no": "label"}),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("NodeFinished", {"node": "b", "status": "failed",
                                   "error": has("when: ${nodes.a.output.label} == 'x'",
                                                "no key 'label'")}),
                 ("TaskCancelled", {"node": "c"}), ("NodeFinished", {"node": "c"}),
                 ("WorkflowFailed", {"error": has("no key 'label'")})]),
    Case("a when reading a value stored by reference fails its node, saying what to do",
         one("${nodes.a.output} == 'x'"), given=[], when=ok("a", BIG),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("NodeFinished", {"node": "b", "status": "failed",
                                   "error": has("${nodes.a.output}", "stored by reference",
                                                "HEADWATER_BLOB_THRESHOLD_BYTES")}),
                 ("TaskCancelled", {"node": "c"}), ("NodeFinished", {"node": "c"}),
                 ("WorkflowFailed", {"error": has("stored by reference")})]),
    Case("a when selecting through a value stored by reference fails its node",
         one("${nodes.a.output.doc.label} == 'x'"), given=[],
         when=ok("a", {"doc": BIG, "small": 1}),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("NodeFinished", {"node": "b", "status": "failed",
                                   "error": has("stored by reference", "cannot compare",
                                                "select inside")}),
                 ("TaskCancelled", {}), ("NodeFinished", {}), ("WorkflowFailed", {})]),
    Case("a when reading an inline field beside one stored by reference holds",
         one("${nodes.a.output.small} == 1"), given=[],
         when=ok("a", {"doc": BIG, "small": 1}),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("ConditionEvaluated", {"node": "b", "value": True}),
                 ("TaskDispatched", {"node": "b"})]),
    Case("a map over a list stored by reference fails, saying so",
         spec(task("a"), map_node("m", "${nodes.a.output}", "a")),
         given=[], when=ok("a", BIG),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("NodeFinished", {"node": "m", "status": "failed",
                                   "error": has("stored by reference")}),
                 ("WorkflowFailed", {})]),
    Case("a when comparing incomparable values fails its node",
         one("${nodes.a.output} < 3"), given=[], when=ok("a", "text"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}),
                 ("NodeFinished", {"node": "b", "status": "failed",
                                   "error": has("cannot compare 'text' < 3")}),
                 ("TaskCancelled", {}), ("NodeFinished", {}), ("WorkflowFailed", {})]),
    Case("a when that gives no boolean fails its node",
         one("${nodes.a.output}"), given=[], when=ok("a", 3),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}),
                 ("NodeFinished", {"node": "b", "status": "failed",
                                   "error": has("gave 3, not true or false")}),
                 ("TaskCancelled", {}), ("NodeFinished", {}), ("WorkflowFailed", {})]),
    Case("a false when on a map: skipped before it expands",
         spec(task("a"), map_node("m", "${nodes.a.output}", "a", when="${nodes.a.output} == []"),
              task("c")),
         given=[], when=ok("a", [1, 2]),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}),
                 ("ConditionEvaluated", {"value": False}),
                 ("NodeFinished", {"node": "m", "status": "skipped"})]),
    Case("an error handler's when sees the error",
         spec(task("a", on_error="h"), task("h", when='${error.type} == "RuntimeError"'),
              task("c")),
         given=[], when=fail("a", retryable=False),
         events=[("TaskFailed", {}), ("NodeFinished", {"node": "a", "status": "failed"}),
                 ("ConditionEvaluated", {"node": "h", "value": True}),
                 ("TaskDispatched", {"node": "h"})]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_when_table(case: Case) -> None:
    result = check_case(case)
    assert gc.state_doc(replay(result.history)) == gc.state_doc(result.state)


def test_a_skipped_branch_of_3000_nodes_cascades_without_recursion() -> None:
    n = 3000
    chain = [task("n0", when="${input.go}"),
             *(task(f"n{i}", f"n{i - 1}") for i in range(1, n)), task("c")]
    result = run([submit(spec(*chain), {"go": False}), ok("c")])
    assert result.state is not None and result.state.status.value == "succeeded"
    assert all(result.state.nodes[f"n{i}"].branch_skipped for i in range(n))
