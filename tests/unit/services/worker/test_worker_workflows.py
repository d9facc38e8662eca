"""What a worker announces of the ``@workflow``s it serves (``services.worker.
workflows``): those of its queue, with their spec, input schema, path and a code
version (a digest of the source unless ``HEADWATER_CODE_VERSION`` names one)."""

from __future__ import annotations

import pytest

from headwater.workflows.decorator import WORKFLOWS
from services.worker.settings import Settings
from services.worker.workflows import SOURCE_DIGEST_CHARS, served_workflows, source_version
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
