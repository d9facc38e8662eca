"""The model hook of the ``hybrid`` example's decide task: an OpenAI-compatible chat
endpoint, when one is named, picks each step's tool; the policy decides otherwise.

Settings (environment of the workers that serve the ``hybrid`` queue):

- ``HEADWATER_EXAMPLE_MODEL_URL``: the API's base URL, such as
  ``http://127.0.0.1:8000/v1`` (a llama.cpp server, vLLM, Ollama's ``/v1``); unset or
  empty: no model, :mod:`examples.hybrid.policy` decides.
- ``HEADWATER_EXAMPLE_MODEL``: the model name sent (default ``default``).
- ``HEADWATER_EXAMPLE_MODEL_API_KEY``: sent as ``Authorization: Bearer ...`` if set.
- ``HEADWATER_EXAMPLE_MODEL_TIMEOUT``: seconds to wait for each part of the reply
  (default 60).

The decide task POSTs ``{base}/chat/completions`` with ``stream: true`` and streams the
reply's tokens as its output chunks (the server-sent events of the OpenAI chat
completions API: ``data: {"choices": [{"delta": {"content": ...}}]}`` ... ``data:
[DONE]``). The reply must hold one JSON object naming the tool; one that does not, or
names a tool or package the loop cannot use, is replaced by the policy's decision
(said in a last chunk). The tokens the reply used count against the loop's budget.
An HTTP error or a lost connection fails the attempt, which is retried.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import connect_sse

from examples.hybrid import policy
from examples.hybrid.policy import DEFAULT_BOUNDS, Bounds, LoopView

URL_SETTING = "HEADWATER_EXAMPLE_MODEL_URL"
MODEL_SETTING = "HEADWATER_EXAMPLE_MODEL"
KEY_SETTING = "HEADWATER_EXAMPLE_MODEL_API_KEY"
TIMEOUT_SETTING = "HEADWATER_EXAMPLE_MODEL_TIMEOUT"

SYSTEM_PROMPT = """You research a question about the Debian packages installed on one \
machine, one step at a time. Each step, pick one tool:
- {"tool": "search", "query": "<words>"}: find more candidate packages;
- {"tool": "read", "package": "<a candidate's name>"}: read a package's description;
- {"tool": "answer"}: draft the answer from the packages read so far;
- {"tool": "finish"}: end, once an answer is drafted.
Reply with that one JSON object and nothing else."""


class ModelError(RuntimeError):
    """Raised when the model endpoint answers with an HTTP error."""


@dataclass(frozen=True)
class ModelSettings:
    """Where the model is (see the module docstring)."""

    url: str
    model: str = "default"
    api_key: str = ""
    timeout_s: float = 60.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ModelSettings | None:
        """The settings in ``env`` (default ``os.environ``), or None when no URL is set.

        Raises:
            ValueError: the timeout is not a positive number (the message names it).
        """
        env = os.environ if env is None else env
        url = env.get(URL_SETTING, "").strip().rstrip("/")
        if not url:
            return None
        raw = env.get(TIMEOUT_SETTING, "60")
        try:
            timeout = float(raw)
        except ValueError:
            timeout = -1.0
        if not timeout > 0:
            raise ValueError(f"{TIMEOUT_SETTING} must be a positive number of seconds, "
                             f"got {raw!r}")
        return cls(url=url, model=env.get(MODEL_SETTING, "").strip() or "default",
                   api_key=env.get(KEY_SETTING, ""), timeout_s=timeout)


def messages(view: LoopView, hints: Mapping[str, float]) -> list[dict[str, str]]:
    """The chat messages for one step: the tools, then the state as JSON (the
    question, the steps left, the best unread candidates, what was read and
    searched, and the policy's scores as a hint)."""
    state = {
        "question": view.question,
        "step": view.step,
        "steps_left": view.max_steps - view.step,
        "answer_drafted": view.draft is not None,
        "candidates": [{"package": p, "relevance": r, "summary": view.summaries.get(p, "")}
                       for p, r in view.unread[:8]],
        "read": [{"package": r.get("package"), "summary": r.get("summary")}
                 for r in view.read],
        "searches": view.searches,
        "policy_scores": dict(hints),
    }
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": json.dumps(state, ensure_ascii=False)}]


def stream_tokens(settings: ModelSettings, chat: list[dict[str, str]],
                  client: httpx.Client | None = None) -> Generator[str, None, int]:
    """Stream one chat completion's text.

    Yields:
        Each piece of the reply's text as it arrives.

    Returns:
        The completion's tokens: the server's ``usage.completion_tokens`` when it
        sends usage, else the number of pieces.

    Raises:
        ModelError: an HTTP error status (the message has the start of the body).
        httpx.HTTPError: the connection failed or timed out.
    """
    body = {"model": settings.model, "messages": chat, "stream": True, "temperature": 0,
            "stream_options": {"include_usage": True}}
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    own = client is None
    http = client or httpx.Client(timeout=settings.timeout_s)
    pieces, usage = 0, None
    try:
        with connect_sse(http, "POST", f"{settings.url}/chat/completions", json=body,
                         headers=headers) as source:
            if source.response.status_code >= 400:
                source.response.read()
                raise ModelError(f"{settings.url}/chat/completions answered "
                                 f"{source.response.status_code}: {source.response.text:.200}")
            for text, tokens in _deltas(sse.data for sse in source.iter_sse()):
                usage = tokens if tokens is not None else usage
                if text:
                    pieces += 1
                    yield text
    finally:
        if own:
            http.close()
    return usage if usage is not None else pieces


def _deltas(data: Iterator[str]) -> Iterator[tuple[str, int | None]]:
    """``(text, completion tokens or None)`` of each chunk, until ``[DONE]``."""
    for raw in data:
        if raw.strip() == "[DONE]":
            return
        try:
            chunk = json.loads(raw)
        except ValueError:
            continue  # a keep-alive or a comment some servers send as data
        if not isinstance(chunk, Mapping):
            continue
        usage = chunk.get("usage")
        tokens = usage.get("completion_tokens") if isinstance(usage, Mapping) else None
        text = ""
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") if isinstance(choice, Mapping) else None
            if isinstance(delta, Mapping) and isinstance(delta.get("content"), str):
                text += delta["content"]
        yield text, tokens if isinstance(tokens, int) else None


def first_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (models wrap it in prose or a code fence)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def decision_from_reply(text: str, view: LoopView,
                        bounds: Bounds = DEFAULT_BOUNDS) -> dict[str, Any] | None:
    """The decide output the model's reply names, or None when it names none the
    loop can use (no JSON object, a tool the loop does not offer, a package that is
    not a candidate, an empty query, finish before an answer is drafted)."""
    reply = first_object(text)
    if reply is None:
        return None
    nested = reply.get("input")
    args: Mapping[str, Any] = nested if isinstance(nested, Mapping) else reply
    tool = reply.get("tool")
    if tool == "finish" or reply.get("finish") is True:
        return policy.choose(view, bounds).decision if view.draft is not None else None
    if not isinstance(tool, str) or tool not in view.tools or tool not in policy.TOOLS:
        return None
    package, query = args.get("package"), args.get("query")
    if tool == "read" and (not isinstance(package, str) or package not in view.candidates):
        return None
    if tool == "search" and (not isinstance(query, str) or not query.strip()):
        return None
    return {"tool": tool, "input": policy.tool_input(
        tool, view, bounds, package=package if tool == "read" else None,
        query=query if tool == "search" else None)}


def decide(view: LoopView, settings: ModelSettings | None, bounds: Bounds = DEFAULT_BOUNDS,
           heartbeat: Callable[[], None] | None = None) -> Generator[str, None, dict[str, Any]]:
    """One step's decision, streamed.

    Without a model: yields the policy's reason and returns its decision (``spend``
    0). With one: yields the reply's tokens (calling ``heartbeat`` between them, the
    task's cancellation point) and returns the decision the reply names with
    ``spend`` = its tokens, or, when it names none the loop can use, the policy's
    (said in a last chunk).

    Raises:
        ModelError, httpx.HTTPError: the model could not be asked (see
            :func:`stream_tokens`).
    """
    choice = policy.choose(view, bounds)
    if settings is None:
        yield choice.reason + "\n"
        return {**choice.decision, "spend": 0}
    if view.draft is not None:  # nothing left to decide: finish with the draft
        yield choice.reason + "\n"
        return {**choice.decision, "spend": 0}
    text: list[str] = []
    tokens = yield from _relay(stream_tokens(settings, messages(view, policy.scores(
        view, bounds))), text, heartbeat)
    decision = decision_from_reply("".join(text), view, bounds)
    if decision is None:
        yield f"\n(the reply names no usable step; the policy decides: {choice.reason})\n"
        decision = choice.decision
    return {**decision, "spend": tokens}


def _relay(tokens: Generator[str, None, int], into: list[str],
           heartbeat: Callable[[], None] | None) -> Generator[str, None, int]:
    """Pass ``tokens`` on, keeping them in ``into``; return their count."""
    while True:
        try:
            token = next(tokens)
        except StopIteration as stop:
            return int(stop.value)
        if heartbeat is not None:
            heartbeat()
        into.append(token)
        yield token
