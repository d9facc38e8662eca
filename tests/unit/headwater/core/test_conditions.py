"""``when`` conditions: what parses, what is refused (named), and how values compare."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.core.conditions import ConditionError, condition_refs, evaluate, parse_condition
from headwater.core.refs import Ref
from headwater.core.spec import parse_spec
from headwater.errors import SpecError

A, B = "${nodes.a.output}", "${input.b}"

VALUES: list[tuple[str, list[Any], bool]] = [
    (f'{A} == "refund"', ["refund"], True),
    (f'{A} == "refund"', ["other"], False),
    (f"{A} != 3", [3], False),
    (f"{A} > 3 and not {B}", [4, False], True),
    (f"{A} > 3 or {B}", [1, False], False),
    (f"{A} in [1, 2, 3]", [2], True),
    (f"{A} not in (1, 2)", [3], True),
    (f'"ab" in {A}', ["xaby"], True),
    (f'"k" in {A}', [{"k": 1}], True),
    (f"1 < {A} <= 3", [3], True),
    (f"1 < {A} <= 3", [4], False),
    (f"-{A} < 0", [2], True),
    (f"{A} == -1.5", [-1.5], True),
    (f"{A}", [True], True),
    (f"{A} == true", [1], False),  # JSON: a boolean is not a number
    (f"{A} == 1", [1.0], True),
    (f"{A} == null", [None], True),
    (f"{A} == None", [None], True),
    (f"{A} == True", [True], True),
    (f"{A} == [1, {B}]", [[1, 2], 2], True),
    (f"{A} == {A}", [{"x": [1]}], True),
    (f'{A} < "b"', ["a"], True),
    (f"not {A}", [[]], True),
    ("true", [], True),
    ("False", [], False),
    (f"- -{A} == 2", [2], True),
    (f"-{A} == -2", [2], True),
    (f"{A} == -1", [-1], True),
    (f"\uff54rue and {A}", [True], True),  # a full-width letter reads as its ASCII one
    (f"{A} == '__when\uff3fref_'", ["__when\uff3fref_"], True),  # in a string: no name
]


@pytest.mark.parametrize(("text", "values", "want"), VALUES, ids=[v[0] for v in VALUES])
def test_evaluate(text: str, values: list[Any], want: bool) -> None:
    assert evaluate(parse_condition(text), values) is want


REFUSED = [
    (f"{A}.label", "attribute access is not allowed"),
    (f"len({A}) > 1", "a call is not allowed"),
    (f"{A}[0] == 1", "a subscript is not allowed"),
    (f"{A} + 1 > 2", "arithmetic is not allowed"),
    ("label == 'x'", "unknown name 'label'"),
    (f"__import__('os') == {A}", "a call is not allowed"),
    (f"{A} ==", "not a valid expression"),
    (f"{A} is None", "the operator 'is' is not allowed"),
    (f"{A} if {B} else 1", "a conditional expression is not allowed"),
    (f"{{'a': 1}} == {A}", "a mapping literal is not allowed"),
    (f"lambda: {A}", "a lambda is not allowed"),
    (f"~{A}", "only 'not' and unary minus"),
    (f"{A} == b'x'", "the literal b'x' is not allowed"),
    (f"__when_ref_0 == {A}", "'__when_ref_' is reserved"),
    ("x" * 5000, "longer than 4096 characters"),
    ("not " * 60 + A, "nested deeper than 50 levels"),
    ("-" * 1000 + A, "nested deeper than 50 levels"),
    ("[" * 60 + "]" * 60 + f" == {A}", "nested deeper than 50 levels"),
    # -- a whole condition that can never be true or false ----------------------------
    ("1", "gives 1 whatever the values, never true or false"),
    ("'yes'", "gives 'yes' whatever the values"),
    ("null", "gives null whatever the values"),
    ("None", "gives null whatever the values"),
    ("9" * 4095, "never true or false"),
    (f"[{A}]", "gives a list whatever the values"),
    (f"({A}, 1)", "gives a list whatever the values"),
    ("-1", "gives a number or fails whatever the values"),
    (f"-{A}", "gives a number or fails whatever the values"),
    # -- unary minus on what is never a number ----------------------------------------
    ("-'a' == 1", "unary minus needs a number, not 'a'"),
    (f"-true == {A}", "unary minus needs a number, not true"),
    (f"-null == {A}", "unary minus needs a number, not null"),
    (f"-[1] == {A}", "unary minus needs a number, not a list"),
    (f"-({A} == 1) == {B}", "unary minus needs a number, not a comparison"),
    (f"-(not {A}) == {B}", "unary minus needs a number, not a 'not'"),
    # -- the placeholder name, however it is spelled; text Python cannot read ---------
    ("_\uff3fwhen_ref_0 == 1", "'__when_ref_' is reserved"),
    (f"_\uff3fwhen_ref_0 == 1 and {A} == 1", "'__when_ref_' is reserved"),
    ("_\uff3fwhen_ref_\u1369 == 1", "'__when_ref_' is reserved"),
    (f"_\uff3fwhen_ref_\u1369 == 1 and {A} == 1", "'__when_ref_' is reserved"),
    (f"_\uff3f\uff57hen\uff3fref_\u0661 == {A}", "'__when_ref_' is reserved"),
    ("'\ud800' == 'x'", "not valid text: a lone surrogate (U+D800) at 1"),
]


@pytest.mark.parametrize(("text", "why"), REFUSED, ids=[r[1] for r in REFUSED])
def test_refused_forms_are_named(text: str, why: str) -> None:
    with pytest.raises(ConditionError, match=None) as info:
        parse_condition(text)
    assert why in str(info.value)


FAILS = [
    (f"{A} < 3", ["x"], "cannot compare 'x' < 3"),
    (f"{A} < 3", [None], "cannot compare null < 3"),
    (f"{A} >= {B}", [True, 1], "cannot compare true >= 1"),
    (f"1 in {A}", [5], "cannot look for 1 in 5"),
    (f"-{A} < 1", ["x"], "cannot negate 'x'"),
    (f"{A}", [3], "gave 3, not true or false"),
    (f"{A} or {B}", [0, "s"], "gave 's', not true or false"),
]


@pytest.mark.parametrize(("text", "values", "why"), FAILS, ids=[f[2] for f in FAILS])
def test_values_that_cannot_be_compared_are_named(text: str, values: list[Any],
                                                   why: str) -> None:
    with pytest.raises(ConditionError) as info:
        evaluate(parse_condition(text), values)
    assert why in str(info.value)


def test_references_are_found_in_order_once_each() -> None:
    cond = parse_condition(f"{A} == {B} or {A} == 1")
    assert cond.refs == (A, B)
    assert condition_refs(f"{A} == ${{item}}") == [
        (A, Ref("nodes", "a", ())), ("${item}", Ref("item", None, ()))]
    assert condition_refs("${env.HOME} == 1")[0][1] == "unknown reference root 'env' in " \
        "${env.HOME}"


def test_a_long_chain_of_ands_is_checked_without_recursion() -> None:
    text = " and ".join([f"{A} == 1"] * 150)
    assert evaluate(parse_condition(text), [1]) is True


@pytest.mark.parametrize(("when", "why"), [
    ("1", "gives 1 whatever the values"),
    ("-'a' == 1", "unary minus needs a number, not 'a'"),
    ("_\uff3fwhen_ref_\u1369 == 1", "'__when_ref_' is reserved"),
    ("'\ud800' == 'x'", "a lone surrogate"),
], ids=["constant", "minus on a string", "placeholder alias", "lone surrogate"])
def test_a_condition_that_can_never_work_is_a_spec_fault(when: str, why: str) -> None:
    """What the gateway answers 422 and the coordinator fails at acceptance: a fault
    naming the node, never another exception."""
    doc = {"name": "p", "nodes": [{"id": "a", "task": "t.a"},
                                  {"id": "b", "task": "t.b", "needs": ["a"], "when": when}]}
    with pytest.raises(SpecError) as info:
        parse_spec(doc)
    [fault] = info.value.faults
    assert fault.startswith("node 'b': when: ") and why in fault, fault
