"""The README's "Workflows as Python code": its block is a test file, and the tests in it
pass as printed, in a fresh interpreter, each in under a second (no broker)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.docpages import README, REPO, blocks

# Runs the block, then each of its test functions; prints {name: seconds} (JSON).
_RUNNER = """
import asyncio, inspect, json, sys, time
space = {"__name__": "test_answer"}
exec(compile(sys.stdin.read(), "<block>", "exec"), space)
took = {}
for name, fn in space.items():
    if name.startswith("test_") and inspect.iscoroutinefunction(fn):
        began = time.perf_counter()
        asyncio.run(fn())
        took[name] = time.perf_counter() - began
print(json.dumps(took))
"""


def test_the_workflow_block_is_a_test_file_that_passes_in_under_a_second() -> None:
    block = next(b for b in blocks(README, "python") if b.code.startswith("# test_answer.py"))
    assert "@workflow" in block.code and "Environment(" in block.code
    done = subprocess.run([sys.executable, "-c", _RUNNER], input=block.code, cwd=REPO,
                          text=True, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    took = json.loads(done.stdout.splitlines()[-1])
    assert list(took) == ["test_an_approved_answer_goes_out_a_day_later"], took
    assert all(seconds < 1.0 for seconds in took.values()), took
