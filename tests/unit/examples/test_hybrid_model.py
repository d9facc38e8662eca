"""Unit tests of the hybrid example's model hook, against a real HTTP server on the
loopback that speaks the OpenAI chat completions streaming protocol (server-sent
events), started per test (no other service)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from examples.hybrid import model, policy, tasks
from headwater.sdk import REGISTRY

TOOLS = ["search", "read", "answer"]


@dataclass
class Script:
    """What the server answers: these text pieces (then usage, if given), or an error."""

    pieces: list[str] = field(default_factory=list)
    usage: int | None = None
    status: int = 200
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            script.requests.append({"path": self.path, **json.loads(body)})
            script.headers.append(dict(self.headers))
            if script.status != 200:
                self.send_response(script.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"error": {"message": "model not loaded"}}')
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            events = [{"choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
            events += [{"choices": [{"index": 0, "delta": {"content": p}}]}
                       for p in script.pieces]
            if script.usage is not None:
                events.append({"choices": [], "usage": {"completion_tokens": script.usage}})
            for event in events:
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")

    return Handler


@pytest.fixture
def server() -> Iterator[tuple[Script, str]]:
    script = Script()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield script, f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def view(step: int = 0, transcript: list[dict[str, Any]] | None = None) -> policy.LoopView:
    passages = [{"package": "gzip", "relevance": 0.7, "summary": "GNU compression"},
                {"package": "zstd", "relevance": 0.4, "summary": "fast compression"}]
    given = {"question": "compress files", "status_path": "/s", "doc_root": "/d",
             "max_steps": 6, "grounding": {"passages": passages, "category": "c"}}
    return policy.view_of(given, transcript or [], step, TOOLS)


def drain(gen: Any) -> tuple[list[str], Any]:
    chunks: list[str] = []
    while True:
        try:
            chunks.append(next(gen))
        except StopIteration as stop:
            return chunks, stop.value


def test_settings_come_from_the_environment() -> None:
    assert model.ModelSettings.from_env({}) is None
    assert model.ModelSettings.from_env({model.URL_SETTING: "  "}) is None
    got = model.ModelSettings.from_env({model.URL_SETTING: "http://h:1/v1/",
                                        model.MODEL_SETTING: "qwen",
                                        model.KEY_SETTING: "k", model.TIMEOUT_SETTING: "5"})
    assert got == model.ModelSettings("http://h:1/v1", "qwen", "k", 5.0)
    assert model.ModelSettings.from_env({model.URL_SETTING: "http://h"}) == (
        model.ModelSettings("http://h"))
    for bad in ("soon", "0", "-3", "nan"):
        with pytest.raises(ValueError, match=model.TIMEOUT_SETTING):
            model.ModelSettings.from_env({model.URL_SETTING: "http://h",
                                          model.TIMEOUT_SETTING: bad})


@pytest.mark.parametrize(("text", "expected"), [
    ('{"tool": "read"}', {"tool": "read"}),
    ('Sure! ```json\n{"tool": "search", "query": "a {b}"}\n``` done',
     {"tool": "search", "query": "a {b}"}),
    ('{broken {"tool": "answer"}', {"tool": "answer"}),
    ('[1, 2] then {"finish": true}', {"finish": True}),
    ("no json here", None),
    ('["only", "a", "list"]', None),
])
def test_first_object(text: str, expected: Any) -> None:
    assert model.first_object(text) == expected


@pytest.mark.parametrize(("reply", "tool", "detail"), [
    ('{"tool": "read", "package": "zstd"}', "read", "zstd"),
    ('{"tool": "read", "input": {"package": "gzip"}}', "read", "gzip"),
    ('{"tool": "search", "query": "xz lzma"}', "search", "xz lzma"),
    ('{"tool": "answer"}', "answer", None),
    ('{"tool": "read", "package": "not-a-candidate"}', None, None),
    ('{"tool": "search", "query": "  "}', None, None),
    ('{"tool": "delete"}', None, None),
    ('{"tool": "finish"}', None, None),  # nothing drafted yet
    ("I would read gzip.", None, None),
])
def test_decision_from_reply(reply: str, tool: str | None, detail: str | None) -> None:
    got = model.decision_from_reply(reply, view())
    if tool is None:
        assert got is None
        return
    assert got is not None and got["tool"] == tool
    if tool == "read":
        assert got["input"] == {"package": detail, "status_path": "/s", "doc_root": "/d"}
    elif tool == "search":
        assert got["input"]["query"] == detail and got["input"]["exclude"] == ["gzip", "zstd"]


def test_messages_carry_the_state_and_the_hint() -> None:
    chat = model.messages(view(), {"read": 0.7})
    assert chat[0]["role"] == "system" and '"tool": "read"' in chat[0]["content"]
    state = json.loads(chat[1]["content"])
    assert state["question"] == "compress files" and state["steps_left"] == 6
    assert [c["package"] for c in state["candidates"]] == ["gzip", "zstd"]
    assert state["policy_scores"] == {"read": 0.7}


def test_stream_tokens_yields_pieces_and_returns_usage(server: tuple[Script, str]) -> None:
    script, url = server
    script.pieces, script.usage = ['{"tool": ', '"read", ', '"package": "zstd"}'], 11
    settings = model.ModelSettings(url, "m", api_key="secret")
    pieces, tokens = drain(model.stream_tokens(settings, [{"role": "user", "content": "x"}]))
    assert pieces == script.pieces and tokens == 11
    sent = script.requests[0]
    assert sent["path"] == "/v1/chat/completions" and sent["stream"] is True
    assert sent["model"] == "m" and sent["messages"] == [{"role": "user", "content": "x"}]
    assert script.headers[0]["Authorization"] == "Bearer secret"


def test_without_usage_the_pieces_are_counted(server: tuple[Script, str]) -> None:
    script, url = server
    script.pieces = ["a", "b", "c"]
    _, tokens = drain(model.stream_tokens(model.ModelSettings(url), []))
    assert tokens == 3
    assert "Authorization" not in script.headers[0]


def test_an_http_error_fails_the_attempt(server: tuple[Script, str]) -> None:
    script, url = server
    script.status = 503
    with pytest.raises(model.ModelError, match=r"answered 503: .*model not loaded"):
        drain(model.stream_tokens(model.ModelSettings(url), []))


def test_an_unreachable_model_fails_the_attempt() -> None:
    settings = model.ModelSettings("http://127.0.0.1:9/v1", timeout_s=2)
    with pytest.raises(httpx.HTTPError):
        drain(model.stream_tokens(settings, []))


def test_decide_streams_the_models_tokens(server: tuple[Script, str]) -> None:
    script, url = server
    script.pieces, script.usage = ['{"tool": "search",', ' "query": "lzma"}'], 9
    beats: list[int] = []
    chunks, decision = drain(model.decide(view(), model.ModelSettings(url),
                                          heartbeat=lambda: beats.append(1)))
    assert chunks == script.pieces and len(beats) == 2
    assert decision["tool"] == "search" and decision["input"]["query"] == "lzma"
    assert decision["spend"] == 9


def test_decide_falls_back_to_the_policy(server: tuple[Script, str]) -> None:
    script, url = server
    script.pieces = ["I think ", "reading is best."]
    chunks, decision = drain(model.decide(view(), model.ModelSettings(url)))
    assert chunks[:2] == script.pieces and "the policy decides" in chunks[2]
    assert decision == {**policy.choose(view()).decision, "spend": 2}


def test_decide_without_a_model_streams_the_reason() -> None:
    chunks, decision = drain(model.decide(view(), None))
    assert chunks == [policy.choose(view()).reason + "\n"]
    assert decision == {"tool": "read", "input": policy.choose(view()).decision["input"],
                        "spend": 0}


def test_a_draft_finishes_without_asking_the_model(server: tuple[Script, str]) -> None:
    script, url = server
    answer = {"step": 1, "tool": "answer", "input": {}, "output": {"answer": "gzip"}}
    _, decision = drain(model.decide(view(2, [answer]), model.ModelSettings(url)))
    assert decision == {"finish": {"answer": "gzip", "steps": 2}, "spend": 0}
    assert script.requests == []


def test_the_decide_task_is_a_streaming_task(monkeypatch: pytest.MonkeyPatch,
                                             server: tuple[Script, str]) -> None:
    from headwater.context import AttemptInfo, TaskContext

    info = REGISTRY["hybrid.decide"]
    assert info.is_generator and info.queue == tasks.QUEUE and info.wants_ctx
    script, url = server
    script.pieces = ['{"tool": "answer"}']
    monkeypatch.setenv(model.URL_SETTING, url)
    ctx = TaskContext(AttemptInfo("wf", "research", 0, 1))
    given = {"question": "compress files", "grounding": {}, "max_steps": 6}
    chunks, decision = drain(tasks.decide(ctx, given, [], 0, TOOLS, 0.0))
    assert chunks == script.pieces and decision["tool"] == "answer"
