"""What a worker announces of the ``@workflow``s it serves (``services.worker.
workflows``): those of its queue, with their spec, input schema, path and a code
version (a digest of the source unless ``HEADWATER_CODE_VERSION`` names one)."""

from __future__ import annotations

import pytest

from headwater.workflows.decorator import WORKFLOWS
from services.worker.settings import Settings
from services.worker.workflows import (
    SOURCE_DIGEST_CHARS,
    pin_children,
    served_workflows,
    source_version,
)
from tests.unit.headwater.workflows import flows


def test_a_worker_announces_the_workflows_of_its_queue() -> None:
    announced = {w.name: w for w in served_workflows("cpu")}
    assert {"wt.main", "wt.child"} <= set(announced)
    main = announced["wt.main"]
    assert main.spec == WORKFLOWS["wt.main"].spec() and main.path == "/main"
    assert main.input_schema["required"] == ["n"]
    assert main.code_version == source_version(flows.main)
    assert len(main.code_version) == SOURCE_DIGEST_CHARS
    assert source_version(flows.main) != source_version(flows.child)
    assert served_workflows("gpu") == () or all(w.name not in ("wt.main", "wt.child")
                                                for w in served_workflows("gpu"))


def test_a_named_code_version_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_CODE_VERSION", "release-7")
    settings = Settings.from_env()
    assert settings.code_version == "release-7"
    assert {w.code_version for w in served_workflows("cpu", settings.code_version)} == {
        "release-7"}
    monkeypatch.delenv("HEADWATER_CODE_VERSION")
    assert Settings.from_env().code_version is None


@pytest.mark.parametrize("named", [None, "release-7"])
def test_a_worker_pins_the_children_of_its_runs_to_what_it_announces(
        named: str | None) -> None:
    """``pin_children``: the version a child of ``wf.call`` records is the one the
    worker announces for its workflow (``HEADWATER_CODE_VERSION`` or the digest)."""
    from headwater.workflows import activation

    try:
        pin_children(named)
        [rule] = activation.CODE_VERSION
        info = WORKFLOWS["wt.child"]
        [announced] = [w for w in served_workflows("cpu", named) if w.name == "wt.child"]
        assert rule(info) == announced.code_version == (named or source_version(flows.child))
    finally:
        activation.CODE_VERSION.clear()
