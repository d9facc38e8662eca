// The gateway's HTTP API, on this page's own origin: JSON reads and writes whose errors
// (RFC 9457 problem documents) become an ApiError naming the fault, a poller, and a
// follower of a run's event stream (Server-Sent Events).

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
  if (!response.ok) throw new ApiError(response.status, doc, text);
  return doc;
}

/** GET path (with query parameters whose value is not empty) as JSON. */
export async function getJson(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") query.set(key, value);
  }
  const url = String(query) ? `${path}?${query}` : path;
  return read(await fetch(url, {headers: {Accept: "application/json"}}));
}

/** POST body as JSON to path; the answer's JSON (or null). */
export async function postJson(path, body = {}) {
  return read(await fetch(path, {
    method: "POST",
    headers: {"Content-Type": "application/json", Accept: "application/json"},
    body: JSON.stringify(body),
  }));
}

/** The path of a workflow's resource: /v1/workflows/<id><rest>. */
export function workflowPath(id, rest = "") {
  return `/v1/workflows/${encodeURIComponent(id)}${rest}`;
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
 * Follow a run's events: onEvent({seq, type, data}) once per event, in seq order, from
 * the first; onState("live" | "reconnecting" | "ended") as the stream goes. The browser
 * reconnects with Last-Event-ID by itself; a stream the gateway refused (a 503 while
 * PostgreSQL is away) is opened again after retryMs, and the events already seen are
 * skipped. The stream is closed after the terminal event. Returns stop().
 */
export function follow(id, onEvent, onState, types, retryMs = 3000) {
  let source = null;
  let last = 0;
  let timer = null;
  let stopped = false;
  const take = (message) => {
    const seq = Number(message.lastEventId);
    if (!Number.isFinite(seq) || seq <= last) return;
    last = seq;
    let data = null;
    try {
      data = JSON.parse(message.data);
    } catch {
      data = message.data;
    }
    onEvent({seq, type: message.type, data});
    if (TERMINAL.has(message.type)) {
      source.close();
      onState("ended");
    }
  };
  const open = () => {
    source = new EventSource(workflowPath(id, "/events"));
    for (const type of types) source.addEventListener(type, take);
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
