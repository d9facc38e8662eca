"""The task SDK: ``@task`` registration and ``TaskContext`` (``headwater.sdk``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import headwater
from headwater import sdk
from headwater.context import AttemptInfo, TaskContext
from headwater.errors import TaskRegistrationError
from headwater.sdk import REGISTRY, TaskInfo, task


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    saved = dict(REGISTRY)
    try:
        yield
    finally:
        REGISTRY.clear()
        REGISTRY.update(saved)


def make_in_module(module: str, source: str = "def run(x):\n    return x\n") -> Any:
    """A function whose ``__module__`` is ``module`` (as if defined in that file)."""
    namespace: dict[str, Any] = {"__name__": module}
    exec(source, namespace)
    return namespace["run"]


def extract_module(module: str) -> dict[str, str]:
    return {"m": module}


def test_bare_decorator_registers_under_module_and_qualname() -> None:
    decorated = task(extract_module)
    assert decorated is extract_module
    name = f"{__name__}.extract_module"
    info = REGISTRY[name]
    assert info == TaskInfo(name, "cpu", extract_module, wants_ctx=False, is_async=False)
    assert extract_module.__headwater_task__ is info  # type: ignore[attr-defined]
    assert decorated("os") == {"m": "os"}


def test_bare_decorator_on_a_nested_function_asks_for_a_name() -> None:
    def nested() -> None: ...

    with pytest.raises(TaskRegistrationError, match="pass name="):
        task(nested)


def test_decorator_with_options() -> None:
    @task(name="docs.extract", queue="gpu-1")
    async def extract(ctx: TaskContext, module: str) -> str:
        return module

    info = REGISTRY["docs.extract"]
    assert (info.queue, info.fn, info.wants_ctx, info.is_async) == ("gpu-1", extract, True, True)
    assert headwater.task is task


def test_the_deploy_hints_are_kept_for_the_deploy_step() -> None:
    @task(name="embed", queue="gpu", gpu=1, memory="8Gi", cpu=2, min_replicas=0,
          max_replicas=4)
    def embed(text: str) -> list[float]:
        return []

    assert REGISTRY["embed"].deploy == {"min_replicas": 0, "max_replicas": 4, "cpu": 2,
                                        "memory": "8Gi", "gpu": 1}
    assert REGISTRY["embed"].deploy is not TaskInfo("x", "q", embed, False, False).deploy


@pytest.mark.parametrize(("hints", "words"), [
    ({"replicas": -1}, "replicas must be a whole number >= 0"),
    ({"gpu": True}, "gpu must be a whole number"),
    ({"min_replicas": 3, "max_replicas": 2}, "min_replicas 3 is over max_replicas 2"),
    ({"memory": "lots"}, "memory must be a Kubernetes quantity"),
    ({"cpu": "1.5 cores"}, "cpu must be a Kubernetes quantity"),
    ({"gpus": 1}, "no option 'gpus'.*'gpu'"),
])
def test_a_bad_deploy_hint_is_refused_at_decoration(hints: dict[str, Any], words: str) -> None:
    with pytest.raises(TaskRegistrationError, match=words):
        task(name="hinted", **hints)(make_in_module("m"))
    assert "hinted" not in REGISTRY


@pytest.mark.parametrize("name", ["", "1abc", "has space", "a/b", "ä", "x" * 201, "a:b"])
def test_bad_name_is_rejected_at_decoration(name: str) -> None:
    with pytest.raises(TaskRegistrationError, match="name"):
        @task(name=name)
        def fn() -> None: ...
    assert name not in REGISTRY


@pytest.mark.parametrize("name", ["a", "_x", "pkg.mod.fn", "a-b_c.d", "x" * 200])
def test_good_names_are_accepted(name: str) -> None:
    @task(name=name)
    def fn() -> None: ...

    assert REGISTRY[name].fn is fn


@pytest.mark.parametrize("queue", ["", "has space", "a.b", "q/1", "x" * 65, "ü"])
def test_bad_queue_is_rejected_at_decoration(queue: str) -> None:
    with pytest.raises(TaskRegistrationError, match="queue"):
        task(name="ok.name", queue=queue)(make_in_module("m"))
    assert "ok.name" not in REGISTRY


def test_a_different_function_under_a_taken_name_is_rejected() -> None:
    @task(name="shared.name")
    def first() -> int:
        return 1

    def second() -> int:
        return 2

    with pytest.raises(TaskRegistrationError, match="already registered by"):
        task(name="shared.name")(second)
    assert REGISTRY["shared.name"].fn is first


def test_the_same_function_may_register_again() -> None:
    fn = make_in_module("pkg.tasks")
    task(name="again")(fn)
    reloaded = make_in_module("pkg.tasks")  # the module imported a second time
    task(name="again")(reloaded)
    assert REGISTRY["again"].fn is reloaded


def test_same_qualname_from_another_module_is_rejected() -> None:
    task(name="shared.run")(make_in_module("pkg_a.tasks"))
    with pytest.raises(TaskRegistrationError):
        task(name="shared.run")(make_in_module("pkg_b.tasks"))


def _plain(x: int) -> int:
    return x


def _with_ctx(ctx: TaskContext, x: int) -> int:
    return x


def _ctx_keyword_only(x: int, *, ctx: TaskContext) -> int:
    return x


async def _async(x: int) -> int:
    return x


async def _async_ctx(ctx: TaskContext) -> None:
    return None


def _context_not_named_ctx(context: TaskContext) -> None:
    return None


DETECTION: list[tuple[Callable[..., Any], bool, bool]] = [
    (_plain, False, False),
    (_with_ctx, True, False),
    (_ctx_keyword_only, True, False),
    (_async, False, True),
    (_async_ctx, True, True),
    (_context_not_named_ctx, False, False),
]


@pytest.mark.parametrize(("fn", "wants_ctx", "is_async"), DETECTION,
                         ids=[f.__name__ for f, _, _ in DETECTION])
def test_wants_ctx_and_is_async_detection(fn: Callable[..., Any], wants_ctx: bool,
                                          is_async: bool) -> None:
    task(fn)
    info = REGISTRY[f"{__name__}.{fn.__qualname__}"]
    assert (info.wants_ctx, info.is_async) == (wants_ctx, is_async)


def test_context_progress_is_clamped_and_sent_to_the_sink() -> None:
    sent: list[tuple[float, str]] = []
    ctx = TaskContext(AttemptInfo("wf", "m", 3, 2), sink=lambda f, m: sent.append((f, m)))
    ctx.progress(0.5, "half")
    ctx.progress(-1)
    ctx.progress(7, 42)  # type: ignore[arg-type]
    assert sent == [(0.5, "half"), (0.0, ""), (1.0, "42")]
    assert (ctx.workflow_id, ctx.node, ctx.index, ctx.attempt, ctx.dispatch_id) == (
        "wf", "m", 3, 2, "wf/m[3]/2")


def test_context_without_a_sink_ignores_progress() -> None:
    TaskContext(AttemptInfo("wf", "a", None, 1)).progress(0.5, "nobody listens")
    assert sdk.REGISTRY == REGISTRY
