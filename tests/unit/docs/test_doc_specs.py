"""The spec blocks of the README and the pages under ``docs/`` validate with the core's spec
parser: a YAML or JSON block holding a whole spec (``nodes``) as it is, a block of nodes
(a YAML list of mappings with ``id``) inside a spec that gives each node it ``needs`` and
does not hold a plain task node, and the ``workflow`` of each JSON body a shell block
sends with ``curl -d``. Every other YAML or JSON block (a kustomization, say) must at
least parse."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from tests.docpages import Block, blocks, pages, spec_faults

DATA = [b for page in pages() for b in blocks(page, "yaml", "yml", "json")]
SHELL = [b for page in pages() for b in blocks(page, "bash", "sh", "shell")]
_CURL_BODY = re.compile(r"-d '([^']*)'")


def is_spec(doc: Any) -> bool:
    """A whole spec: a mapping with ``nodes``."""
    return isinstance(doc, dict) and "nodes" in doc


def is_nodes(doc: Any) -> bool:
    """A block of nodes: a non-empty list of mappings, each with an ``id``."""
    return (isinstance(doc, list) and bool(doc)
            and all(isinstance(node, dict) and "id" in node for node in doc))


def around(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """A spec holding the nodes, with a plain task node for each id they need and lack."""
    have = {node["id"] for node in nodes}
    needed = sorted({n for node in nodes for n in node.get("needs", [])} - have)
    return {"name": "doc-nodes", "nodes": [{"id": n, "task": "docs.upstream"} for n in needed]
            + nodes}


def curl_bodies(block: Block) -> list[Any]:
    """The JSON bodies (``-d '...'``) of the block's ``curl`` commands."""
    return [json.loads(body) for body in _CURL_BODY.findall(block.code)]


def test_the_pages_show_specs() -> None:
    docs = [yaml.safe_load(b.code) for b in DATA]
    assert sum(is_spec(d) for d in docs) >= 1 and sum(is_nodes(d) for d in docs) >= 3, docs
    assert any("workflow" in body for b in SHELL for body in curl_bodies(b))


@pytest.mark.parametrize("block", DATA, ids=Block.where)
def test_each_spec_block_validates(block: Block) -> None:
    doc = yaml.safe_load(block.code)  # JSON is YAML
    if is_spec(doc):
        assert spec_faults(doc) == []
    elif is_nodes(doc):
        assert spec_faults(around(doc)) == []


@pytest.mark.parametrize("block", [b for b in SHELL if "curl" in b.code], ids=Block.where)
def test_each_curl_body_is_json_and_its_workflow_validates(block: Block) -> None:
    bodies = curl_bodies(block)
    assert bodies, "a curl without a JSON body the test can read"
    for body in bodies:
        if "workflow" in body:
            assert spec_faults(body["workflow"]) == []


def test_a_faulty_block_of_nodes_is_caught() -> None:
    nodes = yaml.safe_load("- id: a\n  kind: wait\n  needs: [up]\n  timeout: -1\n")
    assert is_nodes(nodes)
    assert spec_faults(around(nodes)) != []
    assert spec_faults(around([{"id": "a", "task": "t", "needs": ["up"]}])) == []
