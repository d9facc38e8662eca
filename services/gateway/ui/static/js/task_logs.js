// A task's log lines (GET /v1/workflows/{id}/tasks/{node}/{index}/logs, a page at a
// time until the last), followed until they are complete (the same path with
// ?follow=true&after=<cursor>: an event stream of `log` events, then `end`), as the
// task runs and until its last lines are in (they may come just after its end). Lines
// are kept once each (by attempt and line number) and shown in order, one attempt or
// every one.

import {ApiError, getJson, readStream, taskPath} from "./api.js";
import {h, note, replace, when} from "./dom.js";

const PAGE = 500;
const MAX_LINES = 5000;
const MAX_PAGES = 20;

function lineText(line) {
  const level = line.level ? ` ${String(line.level).toUpperCase()}` : "";
  const logger = line.logger ? ` ${line.logger}` : "";
  const stream = line.stream && line.stream !== "log" ? ` [${line.stream}]` : "";
  return `${when(line.at)}${level}${logger}${stream}: ${line.message ?? ""}`;
}

/** The logs of one task: {el, update(), stop()}. */
export class TaskLogs {
  constructor(id, node, index) {
    this.path = taskPath(id, node, index, "/logs");
    this.lines = new Map();  // "attempt:line" -> line
    this.attempt = "";
    this.state = h("p", {class: "muted logs-state"}, "reading the logs…");
    this.pre = h("pre", {class: "logs", "data-node": node, "data-index": index ?? ""});
    this.choice = h("select", {class: "logs-attempt", "aria-label": "attempt"},
      h("option", {value: ""}, "every attempt"));
    this.choice.addEventListener("change", () => this.render());
    this.el = h("div", {class: "task-logs"}, h("h3", {}, "Logs ", this.choice), this.state,
      this.pre);
    this.stopFollow = null;
    this.stopped = false;
    this.complete = false;
    this.loaded = false;
    this.after = null;  // the cursor after the last line read
  }

  /** Read what is there (once), then follow until the logs are complete. */
  async update() {
    if (this.stopped) return;
    if (!this.loaded) {
      this.loaded = true;
      try {
        await this.readPages();
      } catch (error) {
        const gone = error instanceof ApiError && (error.status === 404 || error.status === 405);
        replace(this.state, gone ? "no logs: the gateway keeps none for this task"
          : note("error", error.message));
        this.complete = true;
        return;
      }
    }
    if (!this.complete && !this.stopFollow) this.follow();
    this.render();
  }

  async readPages() {
    let after = null;
    for (let pages = 0; pages < MAX_PAGES && this.lines.size < MAX_LINES; pages += 1) {
      const page = await getJson(this.path, {after, limit: PAGE});
      for (const line of page.lines || []) this.add(line);
      this.complete = !!page.complete;
      if (page.next === null || page.next === undefined || !(page.lines || []).length) break;
      after = page.next;
      this.after = page.next;
    }
  }

  follow() {
    const after = this.after ? `&after=${encodeURIComponent(this.after)}` : "";
    this.stopFollow = readStream(`${this.path}?follow=true${after}`, (message) => {
      if (message.type === "end") {
        this.complete = true;
      } else if (message.type === "log") {
        try {
          this.add(JSON.parse(message.data));
        } catch {
          return;
        }
      }
      this.render();
    }, () => {
      this.stopFollow = null;
      this.render();
    });
  }

  add(line) {
    if (this.lines.size >= MAX_LINES) return;
    this.lines.set(`${line.attempt}:${line.line}`, line);
  }

  render() {
    const attempts = [...new Set([...this.lines.values()].map((l) => l.attempt))].sort((a, b) => a - b);
    const have = new Set([...this.choice.options].map((o) => o.value));
    for (const a of attempts) {
      if (!have.has(String(a))) this.choice.append(h("option", {value: String(a)}, `attempt ${a}`));
    }
    const wanted = this.choice.value;
    const shown = [...this.lines.values()]
      .filter((l) => wanted === "" || String(l.attempt) === wanted)
      .sort((a, b) => a.attempt - b.attempt || a.line - b.line);
    const many = attempts.length > 1 && wanted === "";
    this.pre.textContent = shown.map((l) => (many ? `#${l.attempt} ` : "") + lineText(l)).join("\n");
    const following = this.stopFollow ? "following…" : "";
    const capped = this.lines.size >= MAX_LINES ? ` (the first ${MAX_LINES} lines)` : "";
    replace(this.state, shown.length ? `${shown.length} lines${capped} ${following}`
      : `no log lines yet ${following}`);
    this.pre.hidden = !shown.length;
  }

  stop() {
    this.stopped = true;
    this.stopFollow?.();
  }
}
