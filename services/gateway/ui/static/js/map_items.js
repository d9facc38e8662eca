// A map node's items, a page of 100 at a time in index order (0, 1, 2, … 10, not as
// text), filtered by status, each openable as a task panel: read from GET
// /v1/workflows/{id}/nodes/{node}/tasks (after/limit/status, its `next` passed back as
// `after`); where the gateway has no such resource, from the run's events (the model).

import {ApiError, getJson, workflowPath} from "./api.js";
import {badge, between, duration, h, note, replace, timeEl} from "./dom.js";
import {attemptsOf} from "./run_model.js";

export const PAGE_SIZE = 100;
/** The filter's choices: any, or a task's status (headwater/core/status.py TaskStatus; a
 * unit test compares). */
export const STATUSES = ["", "dispatched", "running", "retry_wait", "succeeded", "failed",
                         "cancelled", "held"];

/** Each item's latest attempt from the events, in index order: the resource's rows. */
export function itemsFromModel(model, node) {
  const latest = new Map();
  for (const a of attemptsOf(model, node)) latest.set(a.index, a);  // attempts ascend
  return [...latest.values()].map((a) => ({
    index: a.index, task: a.name, attempt: a.attempt, worker: a.worker, error: a.error,
    error_type: a.errorType, dispatched_at: a.dispatchedAt, started_at: a.startedAt,
    finished_at: a.endedAt, status: a.outcome === "reused" ? "succeeded" : a.outcome}));
}

/** Page `page` (from 0) of rows filtered by status: {tasks, total, more}. */
export function pageOf(rows, page, status) {
  const kept = status ? rows.filter((r) => r.status === status) : rows;
  const start = page * PAGE_SIZE;
  return {tasks: kept.slice(start, start + PAGE_SIZE), total: kept.length,
          more: start + PAGE_SIZE < kept.length};
}

/** The items of map node of run id: {el, refresh(), stop()}; onOpen(index) opens one;
 * named: each row names its task (a code workflow's, whose tasks differ). */
export class MapItems {
  constructor(id, model, node, onOpen, {named = false} = {}) {
    Object.assign(this, {id, model, node, onOpen, named});
    this.page = 0;
    this.cursors = [null];  // the `after` of each page read so far
    this.status = h("select", {class: "items-status", "aria-label": "status"},
      STATUSES.map((st) => h("option", {value: st}, st || "any status")));
    this.status.addEventListener("change", () => this.go(0, true));
    this.prev = h("button", {type: "button", class: "items-prev"}, "‹ Previous");
    this.next = h("button", {type: "button", class: "items-next"}, "Next ›");
    this.prev.addEventListener("click", () => this.go(this.page - 1));
    this.next.addEventListener("click", () => this.go(this.page + 1));
    this.where = h("span", {class: "items-where muted"});
    this.list = h("div", {class: "items-list"});
    this.el = h("div", {class: "map-items", "data-node": node},
      h("div", {class: "pager"}, this.status, this.prev, this.where, this.next), this.list);
    this.reading = false;
    this.shown = null;
  }

  go(page, reset = false) {
    if (reset) this.cursors = [null];
    this.page = Math.max(0, page);
    this.refresh();
  }

  async read() {
    const after = this.cursors[this.page];
    try {
      const got = await getJson(workflowPath(this.id, `/nodes/${encodeURIComponent(this.node)}/tasks`),
                                {after, limit: PAGE_SIZE, status: this.status.value});
      const more = got.next !== null && got.next !== undefined;
      if (more) this.cursors[this.page + 1] = got.next;
      return {tasks: got.tasks || [], total: got.total, more, fallback: false};
    } catch (error) {
      if (!(error instanceof ApiError) || ![404, 405].includes(error.status)) throw error;
      return {...pageOf(itemsFromModel(this.model, this.node), this.page, this.status.value),
              fallback: true};
    }
  }

  async refresh() {
    if (this.reading) return;
    this.reading = true;
    try {
      this.render(await this.read());
    } catch (error) {
      replace(this.list, note("error", error.message));
    } finally {
      this.reading = false;
    }
  }

  render({tasks, total, more, fallback}) {
    const key = JSON.stringify([this.page, total, more, fallback, tasks]);
    if (key === this.shown) return;  // unchanged: keep the rows (and what is being clicked)
    this.shown = key;
    const first = this.page * PAGE_SIZE;
    replace(this.where, tasks.length
      ? ` items ${first + 1}–${first + tasks.length}${total !== undefined ? ` of ${total}` : ""} `
      : " no items ");
    this.prev.disabled = this.page === 0;
    this.next.disabled = !more;
    const rows = tasks.map((t) => {
      const open = h("button", {type: "button", class: "item-open"}, `[${t.index}]`);
      open.addEventListener("click", () => this.onOpen(t.index));
      return h("tr", {"data-index": t.index, "data-status": t.status}, h("td", {}, open),
        this.named ? h("td", {class: "item-task"}, t.task || "") : null,
        h("td", {}, badge(t.status)), h("td", {}, String(t.attempt ?? "")),
        h("td", {}, t.worker || ""), h("td", {}, timeEl(t.dispatched_at)),
        h("td", {}, duration(between(t.started_at, t.finished_at))),
        h("td", {}, t.error ? h("pre", {class: "error"},
          t.error_type ? `${t.error_type}: ${t.error}` : t.error) : ""));
    });
    replace(this.list, fallback ? h("p", {class: "muted"}, "from the run's events") : null,
      h("table", {class: "items"},
        h("thead", {}, h("tr", {}, ["item", ...(this.named ? ["task"] : []), "status",
                                    "attempt", "worker", "dispatched", "ran", "error"]
          .map((x) => h("th", {}, x)))),
        h("tbody", {}, rows)));
  }

  stop() {}
}
