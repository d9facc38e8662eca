"""``@workflow`` refuses what it cannot run, at decoration time, saying how to fix it."""

from __future__ import annotations

from typing import Any

import pytest

from headwater import WorkflowContext, task, workflow
from headwater.errors import WorkflowRegistrationError
from headwater.workflows.decorator import WORKFLOWS, input_schema_of


async def body(wf: WorkflowContext, question: str, depth: int = 2) -> None:
    return None


@pytest.mark.parametrize(("options", "message"), [
    ({"queu": "gpu"}, "@workflow has no option 'queu' (did you mean 'queue'?)"),
    ({"name": "has space"}, "name 'has space' must match"),
    ({"queue": "a/b"}, "queue 'a/b' must match"),
    ({"path": "/v1/mine"}, "path '/v1/mine' must start with / (not /v1/)"),
    ({"max_events": 5}, "max_events must be a whole number from 10"),
    ({"timeout": 0}, "timeout must be a number of seconds > 0"),
    ({"replicas": -1}, "replicas must be a whole number >= 0"),
    ({"min_replicas": 3, "max_replicas": 2}, "min_replicas 3 is over max_replicas 2"),
    ({"memory": "lots"}, "memory must be a Kubernetes quantity"),
])
def test_bad_options_are_refused_by_name(options: dict[str, Any], message: str) -> None:
    with pytest.raises(WorkflowRegistrationError) as caught:
        workflow(name=options.pop("name", "wd.bad"), **options)(body)
    assert message in str(caught.value)
    assert "wd.bad" not in WORKFLOWS


def test_a_sync_function_is_refused() -> None:
    def sync(wf: WorkflowContext) -> None:
        return None
    with pytest.raises(WorkflowRegistrationError, match="must be an async def function"):
        workflow(name="wd.sync")(sync)


def test_a_name_taken_by_a_task_is_refused() -> None:
    @task(name="wd.taken")
    def taken() -> None:
        return None
    with pytest.raises(WorkflowRegistrationError, match="is taken by the @task"):
        workflow(name="wd.taken")(body)


def test_the_input_schema_comes_from_the_type_hints() -> None:
    assert input_schema_of(body) == {
        "type": "object", "required": ["question"],
        "properties": {"question": {"type": "string"}, "depth": {"type": "integer"}},
        "additionalProperties": False}


def test_the_deploy_hints_are_kept_for_the_deploy_step() -> None:
    @workflow(name="wd.hinted", replicas=2, min_replicas=1, max_replicas=4, cpu="500m",
              memory="1Gi", gpu=1)
    async def hinted(wf: WorkflowContext) -> None:
        return None
    assert WORKFLOWS["wd.hinted"].deploy == {"replicas": 2, "min_replicas": 1,
                                              "max_replicas": 4, "cpu": "500m",
                                              "memory": "1Gi", "gpu": 1}
