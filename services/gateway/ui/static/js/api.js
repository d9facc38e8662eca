// The gateway's HTTP API, on this page's own origin: JSON reads and writes whose errors
// (RFC 9457 problem documents) become an ApiError naming the fault, a poller, and a
// follower of a run's event stream (Server-Sent Events). Every request carries the
// tab's token (session.js) when there is one; a 401 is told to session.unauthorized.

import {EventStreamParser, readEventStream} from "./eventstream.js";
import {token, unauthorized, withToken} from "./session.js";

/** An error answer: status, the problem document (or null) and a readable message. */
export class ApiError extends Error {
  constructor(status, problem, text) {
    const title = problem?.title || `HTTP ${status}`;
    const detail = problem?.detail || (problem ? "" : (text || "").slice(0, 300));
    const errors = Array.isArray(problem?.errors) && problem.errors.length > 1
      ? ` (${problem.errors.join("; ")})` : "";
    super(`${status} ${title}${detail ? `: ${detail}` : ""}${errors}`);
    this.status = status;
    this.problem = problem;
  }
}

async function read(response) {
  const text = await response.text();
  let doc = null;
  try {
    doc = text ? JSON.parse(text) : null;
  } catch {
    doc = null;
  }
  if (!response.ok) {
    const error = new ApiError(response.status, doc, text);
    if (response.status === 401) unauthorized(error);
    throw error;
  }
  return doc;
}

/** GET path (with query parameters whose value is not empty) as JSON. */
export async function getJson(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (Array.isArray(value)) for (const item of value) query.append(key, item);
    else if (value !== undefined && value !== null && value !== "") query.set(key, value);
  }
  const url = String(query) ? `${path}?${query}` : path;
  return read(await fetch(url, {headers: withToken({Accept: "application/json"})}));
}

/** GET path (a blob's href) as a Blob, with the tab's token; an ApiError when refused. */
export async function getBlob(path) {
  const response = await fetch(path, {headers: withToken({Accept: "application/json"})});
  if (!response.ok) await read(response);
  return response.blob();
}

/** POST body as JSON to path; the answer's JSON (or null). */
export async function postJson(path, body = {}) {
  return read(await fetch(path, {
    method: "POST",
    headers: withToken({"Content-Type": "application/json", Accept: "application/json"}),
    body: JSON.stringify(body),
  }));
}

/** The path of a workflow's resource: /v1/workflows/<id><rest>. */
export function workflowPath(id, rest = "") {
  return `/v1/workflows/${encodeURIComponent(id)}${rest}`;
}

/** The path of one task of a run: /v1/workflows/<id>/tasks/<node>/<index or -><rest>. */
export function taskPath(id, node, index, rest = "") {
  const item = index === null || index === undefined ? "-" : String(index);
  return workflowPath(id, `/tasks/${encodeURIComponent(node)}/${item}${rest}`);
}

/**
 * Read the event stream at path (fetch, with the tab's token) once, until it ends or
 * stop() is called: onMessage({type, data, lastEventId}) per event, then onEnd(status)
 * (the HTTP status; 0 when the answer was no event stream, -1 on a network error). It
 * is not opened again. Returns stop().
 */
export function readStream(path, onMessage, onEnd) {
  const abort = new AbortController();
  const parser = new EventStreamParser(onMessage);
  const done = (status) => {
    if (!abort.signal.aborted) onEnd(status);
  };
  readEventStream(path, {headers: withToken(), signal: abort.signal, onOpen: () => {}, parser})
    .then(done, () => done(-1));
  return () => abort.abort();
}

/**
 * Call task() now and again every everyMs after each call ends, until stop() is called.
 * A call that throws is passed to onError and the polling goes on.
 */
export function poll(task, everyMs, onError) {
  let timer = null;
  let stopped = false;
  const run = async () => {
    try {
      await task();
    } catch (error) {
      if (onError) onError(error);
    }
    if (!stopped) timer = setTimeout(run, everyMs);
  };
  run();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

const TERMINAL = new Set(["WorkflowSucceeded", "WorkflowFailed", "WorkflowCancelled"]);

/**
 * Follow a run's events: onEvent({seq, type, data}) once per event of the given types,
 * in seq order, from the first; onState("live" | "reconnecting" | "ended") as the
 * stream goes. A dropped stream is opened again with Last-Event-ID; one the gateway
 * refused (a 503 while PostgreSQL is away) after retryMs; the events already seen are
 * skipped. The stream is closed after the terminal event. Without a token the browser's
 * EventSource reads it; with one, fetch() does (EventSource sends no Authorization
 * header). Returns stop().
 */
export function follow(id, onEvent, onState, types, retryMs = 3000) {
  const url = workflowPath(id, "/events");
  const wanted = new Set(types);
  let last = 0;
  let ended = false;
  const take = (message) => {
    const seq = Number(message.lastEventId);
    if (ended || !wanted.has(message.type) || !Number.isFinite(seq) || seq <= last) return;
    last = seq;
    let data = null;
    try {
      data = JSON.parse(message.data);
    } catch {
      data = message.data;
    }
    onEvent({seq, type: message.type, data});
    if (TERMINAL.has(message.type)) {
      ended = true;
      onState("ended");
    }
  };
  const isEnded = () => ended;
  return token() ? fetchFollow(url, take, isEnded, onState, retryMs)
    : sourceFollow(url, take, isEnded, onState, types, retryMs);
}

function sourceFollow(url, take, isEnded, onState, types, retryMs) {
  let source = null;
  let timer = null;
  let stopped = false;
  const handle = (message) => {
    take(message);
    if (isEnded()) source.close();
  };
  const open = () => {
    source = new EventSource(url);
    for (const type of types) source.addEventListener(type, handle);
    source.onopen = () => onState("live");
    source.onerror = () => {
      if (stopped || source.readyState !== EventSource.CLOSED) {
        if (!stopped) onState("reconnecting");
        return;
      }
      onState("reconnecting");
      timer = setTimeout(open, retryMs);
    };
  };
  open();
  return () => {
    stopped = true;
    clearTimeout(timer);
    if (source) source.close();
  };
}

function fetchFollow(url, take, isEnded, onState, retryMs) {
  const abort = new AbortController();
  const parser = new EventStreamParser((message) => {
    take(message);
    if (isEnded()) abort.abort();
  });
  let timer = null;
  const open = async () => {
    let status = 0;
    try {
      status = await readEventStream(url, {headers: withToken(), signal: abort.signal,
                                           onOpen: () => onState("live"), parser});
    } catch {
      status = -1;  // a network error, or aborted (checked next)
    }
    if (abort.signal.aborted || isEnded()) return;
    if (status === 401) {
      unauthorized(new ApiError(401, {title: "Unauthorized",
                                      detail: "the event stream needs a valid token"}));
      return;
    }
    onState("reconnecting");
    timer = setTimeout(open, parser.retryMs ?? retryMs);
  };
  open();
  return () => {
    abort.abort();
    clearTimeout(timer);
  };
}
