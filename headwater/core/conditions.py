"""``when:`` conditions: a small, safe expression language over input references.

``${nodes.classify.output.label} == "refund" and ${input.amount} < 100``

Each ``${...}`` is replaced by a placeholder name and the text is parsed by Python's
``ast`` (mode ``"eval"``); only these forms are accepted: ``and``, ``or``, ``not``,
comparisons (``== != < <= > >= in``, ``not in``, chained as in Python), literals
(strings, numbers, ``true``/``false``/``null`` and ``True``/``False``/``None``),
list and tuple literals, and unary minus. Attribute access, calls, subscripts, other
names and every other form are refused at parse time, so a condition can compute
nothing but a comparison (it is evaluated by walking the tree here, never by ``eval``).
What can never work is refused at parse time too: a whole condition that is a literal
other than true or false (``"1"``), a list or a unary minus (it never gives true or
false), unary minus on a literal, list, comparison or ``not`` (never a number), the
placeholder names however they are spelled (Python reads identifiers in their NFKC
form, so ``_`` followed by a full-width low line U+FF3F and ``when_ref_0`` is
``__when_ref_0``), and text that is not valid Unicode (a lone surrogate).

Values follow JSON: a boolean equals only a boolean (``true == 1`` is false); ``<`` and
its kin compare two numbers or two strings; ``x in y`` looks ``x`` up in a list, a
substring in a string, or a key in an object. Anything else is a ``ConditionError``, as
is a value that is not a boolean in the end.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from headwater.core.refs import Ref, parse_ref

_REF_TEXT = re.compile(r"\$\{[^}]*\}")
_HOLE = "__when_ref_"
_SURROGATE = re.compile("[\ud800-\udfff]")
_NAMED = {"true": True, "false": False, "null": None}
_COMPARE: dict[type[ast.cmpop], str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in",
}
MAX_LENGTH = 4096
"""Characters: the longest condition accepted."""
MAX_DEPTH = 50
"""The deepest nesting accepted (``not not ...``, lists in lists): evaluation recurses."""


class ConditionError(ValueError):
    """Raised when a condition is malformed (at parse time) or cannot be evaluated on
    the values it got (at run time): the message says why."""


@dataclass(frozen=True)
class Condition:
    """A parsed ``when`` expression.

    Attributes:
        text: the expression as written.
        refs: the raw ``${...}`` references, in order of appearance (placeholder ``i``
            stands for ``refs[i]``).
        tree: the parsed expression (placeholders in place of the references).
    """

    text: str
    refs: tuple[str, ...]
    tree: ast.expr = field(compare=False, repr=False)


def condition_refs(text: str) -> list[tuple[str, Ref | str]]:
    """``(raw, parsed)`` of every ``${...}`` in ``text`` (parsed as by
    ``refs.parse_ref``: a ``Ref``, or a string saying why it is malformed)."""
    out: list[tuple[str, Ref | str]] = []
    for raw in _REF_TEXT.findall(text):
        parsed = parse_ref(raw)
        out.append((raw, parsed if parsed is not None else "malformed reference"))
    return out


@lru_cache(maxsize=1024)
def parse_condition(text: str) -> Condition:
    """Parse and check a condition (cached: a spec's conditions are parsed once).

    Args:
        text: the expression, e.g. ``'${nodes.a.output.n} > 3 and not ${input.dry}'``.

    Returns:
        The ``Condition``.

    Raises:
        ConditionError: the expression is too long, not valid text or syntax, uses a
            form outside the language (named: ``attribute access``, ``a call``,
            ``unknown name 'x'``, ``'__when_ref_' is reserved``, ...), negates what is
            never a number, or as a whole is never true or false (``gives 1 whatever
            the values``).
    """
    if len(text) > MAX_LENGTH:
        raise ConditionError(f"longer than {MAX_LENGTH} characters")
    if _HOLE in text:
        raise ConditionError(f"{_HOLE!r} is reserved")
    surrogate = _SURROGATE.search(text)
    if surrogate:
        raise ConditionError(f"not valid text: a lone surrogate "
                             f"(U+{ord(surrogate.group()):04X}) at {surrogate.start()}")
    refs = tuple(dict.fromkeys(_REF_TEXT.findall(text)))
    source = _REF_TEXT.sub(lambda m: f" {_HOLE}{refs.index(m.group(0))} ", text).strip()
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError as e:
        raise ConditionError(f"not a valid expression ({e.msg})") from None
    except ValueError as e:  # older Pythons: "source code string cannot contain null bytes"
        raise ConditionError(f"not a valid expression ({e})") from None
    except (RecursionError, MemoryError):
        raise ConditionError(f"nested deeper than {MAX_DEPTH} levels") from None
    _check(tree, len(refs))
    _check_holes(tree, source)
    never = _never_boolean(tree)
    if never:
        raise ConditionError(f"gives {never} whatever the values, never true or false "
                             "(write a comparison, e.g. '${nodes.a.output.n} == 1')")
    return Condition(text=text, refs=refs, tree=tree)


def evaluate(condition: Condition, values: Sequence[Any]) -> bool:
    """The condition's value, given the values of its references.

    Args:
        condition: from ``parse_condition``.
        values: ``values[i]`` is the value of ``condition.refs[i]`` (JSON-like).

    Returns:
        True or False.

    Raises:
        ConditionError: two values cannot be compared (``cannot compare 'a' < 3``), an
            ``in`` has no container on its right, or the result is not a boolean.
    """
    result = _value(condition.tree, values)
    if not isinstance(result, bool):
        raise ConditionError(f"gave {_show(result)}, not true or false")
    return result


def _check(node: ast.expr, holes: int) -> None:
    """Refuse every form outside the language, iteratively (a long ``and`` chain
    needs no recursion)."""
    stack: list[tuple[ast.expr, int]] = [(node, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ConditionError(f"nested deeper than {MAX_DEPTH} levels")
        children = _CHILDREN.get(type(item))
        if children is None:
            raise ConditionError(f"{_form_name(item)} is not allowed")
        stack.extend((child, depth + 1) for child in children(item, holes))


def _check_holes(tree: ast.expr, source: str) -> None:
    """Refuse a name that reads as a placeholder but is not one written here: Python
    reads identifiers in their NFKC form, so one spelled with a full-width low line
    (U+FF3F) is ``__when_ref_0`` (the text itself holds no ``__when_ref_``, which
    ``parse_condition`` refuses)."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.Name) and node.id.startswith(_HOLE)
                and ast.get_source_segment(source, node) != node.id):
            raise ConditionError(f"{_HOLE!r} is reserved (however it is spelled)")


def _never_boolean(tree: ast.expr) -> str | None:
    """What a whole condition gives when it can never give true or false, or None."""
    if isinstance(tree, ast.Constant) and not isinstance(tree.value, bool):
        return _show(tree.value)
    if isinstance(tree, ast.Name) and tree.id in _NAMED and _NAMED[tree.id] is None:
        return "null"
    if isinstance(tree, ast.List | ast.Tuple):
        return "a list"
    if isinstance(tree, ast.UnaryOp) and isinstance(tree.op, ast.USub):
        return "a number or fails"
    return None


def _never_number(node: ast.expr) -> str | None:
    """What an operand of unary minus is when it can never be a number, or None."""
    if isinstance(node, ast.Constant) and (isinstance(node.value, bool | str)
                                           or node.value is None):
        return _show(node.value)
    if isinstance(node, ast.Name) and node.id in _NAMED:
        return _show(_NAMED[node.id])
    kinds: list[tuple[type | tuple[type, ...], str]] = [
        ((ast.List, ast.Tuple), "a list"), (ast.Compare, "a comparison")]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return "a 'not'"
    return next((name for kind, name in kinds if isinstance(node, kind)), None)


def _unary_children(node: ast.UnaryOp, holes: int) -> list[ast.expr]:
    if not isinstance(node.op, ast.Not | ast.USub):
        raise ConditionError("only 'not' and unary minus are allowed before a value")
    never = _never_number(node.operand) if isinstance(node.op, ast.USub) else None
    if never:
        raise ConditionError(f"unary minus needs a number, not {never}")
    return [node.operand]


def _compare_children(node: ast.Compare, holes: int) -> list[ast.expr]:
    bad = [op for op in node.ops if type(op) not in _COMPARE]
    if bad:
        raise ConditionError(f"the operator {_op_name(bad[0])} is not allowed "
                             "(use == != < <= > >= in, not in)")
    return [node.left, *node.comparators]


def _literal_children(node: ast.Constant, holes: int) -> list[ast.expr]:
    if node.value is not None and not isinstance(node.value, str | int | float):
        raise ConditionError(f"the literal {node.value!r} is not allowed")
    return []


def _name_children(node: ast.Name, holes: int) -> list[ast.expr]:
    if node.id.startswith(_HOLE) and not _is_hole(node.id, holes):
        raise ConditionError(f"{_HOLE!r} is reserved (however it is spelled)")
    if node.id not in _NAMED and not _is_hole(node.id, holes):
        raise ConditionError(f"unknown name {node.id!r} (name values with ${{...}} "
                             "references; literals are true, false, null)")
    return []


_CHILDREN: dict[type[ast.expr], Callable[[Any, int], list[ast.expr]]] = {
    ast.BoolOp: lambda node, holes: list(node.values),
    ast.UnaryOp: _unary_children,
    ast.Compare: _compare_children,
    ast.List: lambda node, holes: list(node.elts),
    ast.Tuple: lambda node, holes: list(node.elts),
    ast.Constant: _literal_children,
    ast.Name: _name_children,
}
"""The forms of the language, each with what it contains (checking it on the way)."""


def _is_hole(name: str, holes: int) -> bool:
    suffix = name.removeprefix(_HOLE)  # str.isdigit alone takes digits of any script
    return suffix != name and suffix.isascii() and suffix.isdigit() and int(suffix) < holes


def _form_name(node: ast.expr) -> str:
    names: dict[type[ast.expr], str] = {
        ast.Attribute: "attribute access", ast.Call: "a call", ast.Subscript: "a subscript",
        ast.BinOp: "arithmetic", ast.Lambda: "a lambda", ast.Dict: "a mapping literal",
        ast.IfExp: "a conditional expression", ast.NamedExpr: "an assignment",
    }
    return names.get(type(node), f"the form {type(node).__name__!r}")


def _op_name(op: ast.cmpop) -> str:
    return {ast.Is: "'is'", ast.IsNot: "'is not'"}.get(type(op), repr(type(op).__name__))


def _value(node: ast.expr, values: Sequence[Any]) -> Any:
    """The value of a checked tree (its depth is bounded by the text's nesting)."""
    return _VALUE[type(node)](node, values)


def _name_value(node: ast.Name, values: Sequence[Any]) -> Any:
    if node.id in _NAMED:
        return _NAMED[node.id]
    return values[int(node.id.removeprefix(_HOLE))]


def _unary_value(node: ast.UnaryOp, values: Sequence[Any]) -> Any:
    operand = _value(node.operand, values)
    if isinstance(node.op, ast.Not):
        return not _truth(operand)
    if not _number(operand):
        raise ConditionError(f"cannot negate {_show(operand)}")
    return -operand


def _compare_value(node: ast.Compare, values: Sequence[Any]) -> bool:
    """A (chained) comparison: ``a < b <= c`` is ``a < b and b <= c``."""
    left = _value(node.left, values)
    for op, right_node in zip(node.ops, node.comparators, strict=True):
        right = _value(right_node, values)
        if not _compare(_COMPARE[type(op)], left, right):
            return False
        left = right
    return True


def _bool_op(node: ast.BoolOp, values: Sequence[Any]) -> Any:
    """``and``/``or`` as in Python: short-circuit, giving the deciding operand."""
    want = isinstance(node.op, ast.Or)
    result: Any = None
    for operand in node.values:
        result = _value(operand, values)
        if _truth(result) is want:
            return result
    return result


_VALUE: dict[type[ast.expr], Callable[[Any, Sequence[Any]], Any]] = {
    ast.Constant: lambda node, values: node.value,
    ast.Name: _name_value,
    ast.List: lambda node, values: [_value(e, values) for e in node.elts],
    ast.Tuple: lambda node, values: [_value(e, values) for e in node.elts],
    ast.BoolOp: _bool_op,
    ast.UnaryOp: _unary_value,
    ast.Compare: _compare_value,
}


def _truth(value: Any) -> bool:
    return bool(value)


def _compare(op: str, left: Any, right: Any) -> bool:
    if op in ("==", "!="):
        return _equal(left, right) is (op == "==")
    if op in ("in", "not in"):
        return _contains(right, left) is (op == "in")
    if (_number(left) and _number(right)) or (isinstance(left, str) and isinstance(right, str)):
        ordered: dict[str, Callable[[Any, Any], bool]] = {
            "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
            ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
        }
        return ordered[op](left, right)
    raise ConditionError(f"cannot compare {_show(left)} {op} {_show(right)}")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _equal(left: Any, right: Any) -> bool:
    """JSON equality: booleans equal only booleans, numbers compare by value."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left is right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_equal, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_equal(v, right[k]) for k, v in left.items())
    return (type(left) is type(right) or (_number(left) and _number(right))) and left == right


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, list):
        return any(_equal(item, x) for x in container)
    if isinstance(container, str) and isinstance(item, str):
        return item in container
    if isinstance(container, dict) and isinstance(item, str):
        return item in container
    raise ConditionError(f"cannot look for {_show(item)} in {_show(container)}")


def _show(value: Any) -> str:
    text = {True: "true", False: "false", None: "null"}.get(value) if (
        value is None or isinstance(value, bool)) else repr(value)
    assert text is not None
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class ConditionEvaluated:
    """History: a node's ``when`` condition gave ``value``; false skips the node."""

    workflow_id: str
    node: str
    at_ms: int
    value: bool = True
