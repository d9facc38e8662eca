// The run's history on a time axis (SVG), from its events (run_model.js): one row per
// task with a bar per attempt (dispatched → started: queued, lighter; started → ended:
// ran, coloured by outcome), one per wait or sleep, child runs marked. With more rows
// than MAX_ROWS (a map of 10,000 items) there is one row per node instead, its attempts
// counted in time buckets: how many were under way, shaded by that count, red where one
// failed. rows() is pure; draw() builds the picture; clicking a row opens its node.

import {duration, s, when} from "./dom.js";
import {taskKey, taskOrder} from "./run_model.js";

export const MAX_ROWS = 150;
const BUCKETS = 160;
const WIDTH = 640;
const LABEL_W = 150;
const ROW_H = 16;
const AXIS_H = 22;
const PAD = 6;
const RIGHT = 30;  // room for the last tick's label

function rowFor(rows, key, fields) {
  let row = rows.get(key);
  if (!row) {
    row = {key, bars: [], ...fields};
    rows.set(key, row);
  }
  return row;
}

/**
 * The rows of model's history: [{key, label, node, index, kind, aggregate, bars: [{kind,
 * start, mid, end, outcome, attempt}], count}], in task order (a map's items by index as
 * numbers); one row per node (aggregate: true) when there are more than maxRows.
 */
export function rows(model, maxRows = MAX_ROWS) {
  const kinds = new Map((model.spec?.nodes || []).map((n) => [n?.id, n?.kind || "task"]));
  const found = new Map();
  for (const a of model.attempts.values()) {
    const child = kinds.get(a.node) === "workflow" || (a.queue || "").startsWith("@");
    rowFor(found, a.task, {label: a.task, node: a.node, index: a.index,
                           kind: child ? "child" : "task"}).bars.push({
      kind: "attempt", start: a.dispatchedAt, mid: a.startedAt, end: a.endedAt,
      outcome: a.outcome, attempt: a.attempt});
  }
  for (const sp of model.spans.values()) {
    rowFor(found, sp.key, {label: taskKey(sp.node, sp.index), node: sp.node, index: sp.index,
                           kind: sp.kind}).bars.push({
      kind: sp.kind, start: sp.start, mid: null, end: sp.end, outcome: sp.outcome, attempt: null});
  }
  const listed = [...found.values()].sort(taskOrder(model.spec));
  if (listed.length <= maxRows) return listed.map((r) => ({...r, aggregate: false, count: 1}));
  const byNode = new Map();
  for (const r of listed) {
    const row = rowFor(byNode, r.node, {label: r.node, node: r.node, index: null, kind: r.kind,
                                        aggregate: true, count: 0});
    row.count += 1;
    row.bars.push(...r.bars);
  }
  return [...byNode.values()];
}

/** The span drawn: from the run's acceptance (or its first bar) to its end (or now). */
export function span(model, listed, now) {
  const starts = listed.flatMap((r) => r.bars.map((b) => b.start)).filter((t) => t != null);
  const t0 = model.startedAt ?? (starts.length ? Math.min(...starts) : now);
  const t1 = Math.max(model.endedAt ?? now, t0 + 1);
  return {t0, t1};
}

/** Bucket the bars of an aggregated row: [{from, to, count, failed}], non-empty only. */
export function buckets(bars, t0, t1, now, n = BUCKETS) {
  const size = (t1 - t0) / n;
  const count = new Array(n).fill(0);
  const failed = new Array(n).fill(false);
  const at = (t) => Math.min(n - 1, Math.max(0, Math.floor((t - t0) / size)));
  for (const b of bars) {
    if (b.start == null) continue;
    const last = at(b.end ?? now);
    for (let i = at(b.start); i <= last; i += 1) count[i] += 1;
    if (b.outcome === "failed") failed[last] = true;
  }
  const out = [];
  count.forEach((c, i) => {
    if (c) out.push({from: t0 + i * size, to: t0 + (i + 1) * size, count: c, failed: failed[i]});
  });
  return out;
}

function ticks(t0, t1, x) {
  const total = t1 - t0;
  const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 3e4, 6e4, 12e4,
                 3e5, 6e5, 18e5, 36e5, 72e5, 216e5, 432e5, 864e5];
  const step = steps.find((st) => total / st <= 6) ?? total / 6;
  const out = [];
  for (let t = 0; t <= total; t += step) {
    out.push(s("g", {class: "tl-tick"},
      s("line", {x1: x(t0 + t), x2: x(t0 + t), y1: AXIS_H - 4, y2: AXIS_H}),
      s("text", {x: x(t0 + t), y: AXIS_H - 8}, t ? `+${duration(t)}` : "0")));
  }
  return out;
}

function bar(row, b, x, y, now) {
  const end = b.end ?? now;
  const tip = `${row.label}${b.attempt ? ` attempt ${b.attempt}` : ` ${b.kind}`}: ${b.outcome}`
    + (b.mid ? `, queued ${duration(b.mid - b.start)}, ran ${duration(end - b.mid)}`
      : `, ${duration(end - b.start)}`);
  const parts = [s("title", {}, tip)];
  const w = (a, z) => Math.max(1.5, x(z) - x(a));
  const split = b.mid ?? (b.kind === "attempt" ? end : b.start);
  if (split > b.start) {
    parts.push(s("rect", {class: "tl-queued", x: x(b.start), y: y + 3, width: w(b.start, split),
                          height: ROW_H - 6}));
  }
  if (b.kind !== "attempt" || b.mid) {
    parts.push(s("rect", {class: `tl-ran o-${b.outcome}`, x: x(split), y: y + 2,
                          width: w(split, end), height: ROW_H - 4}));
  }
  return s("g", {class: `tl-bar k-${b.kind} o-${b.outcome}`, "data-attempt": b.attempt ?? ""},
    parts);
}

function aggregateBars(row, x, y, t0, t1, now) {
  const found = buckets(row.bars, t0, t1, now);
  const most = Math.max(1, ...found.map((b) => b.count));
  return found.map((b) => s("rect", {
    class: `tl-bucket${b.failed ? " o-failed" : ""}`, x: x(b.from), y: y + 2,
    width: Math.max(1, x(b.to) - x(b.from)), height: ROW_H - 4,
    "fill-opacity": (0.25 + 0.75 * (b.count / most)).toFixed(2)},
  s("title", {}, `${row.label}: ${b.count} under way${b.failed ? ", one failed" : ""}`)));
}

/**
 * The SVG of the rows between t0 and t1 (ms); now ends what has not ended. Each row is
 * <g class="tl-row" data-node data-index>; onPick(node, index) when one is clicked.
 */
export function draw(listed, {t0, t1}, now, onPick) {
  const height = AXIS_H + listed.length * ROW_H + PAD;
  const x = (t) => LABEL_W + ((t - t0) / (t1 - t0)) * (WIDTH - LABEL_W - RIGHT);
  const svg = s("svg", {class: "timeline", width: WIDTH, height, viewBox: `0 0 ${WIDTH} ${height}`,
                        role: "img", "aria-label": `the run's timeline from ${when(t0)}`},
    s("g", {class: "tl-axis"}, ticks(t0, t1, x)));
  listed.forEach((row, i) => {
    const y = AXIS_H + i * ROW_H;
    const label = row.aggregate ? `${row.label} (${row.count})` : row.label;
    const g = s("g", {class: `tl-row k-${row.kind}${row.aggregate ? " aggregate" : ""}`,
                      "data-node": row.node, "data-index": row.index ?? "",
                      "data-count": row.count, tabindex: 0},
      s("rect", {class: "tl-band", x: 0, y, width: WIDTH, height: ROW_H}),
      s("text", {class: "tl-label", x: 4, y: y + ROW_H - 4},
        label.length > 22 ? `${label.slice(0, 21)}…` : label),
      row.aggregate ? aggregateBars(row, x, y, t0, t1, now)
        : row.bars.filter((b) => b.start != null).map((b) => bar(row, b, x, y, now)));
    const pick = () => onPick(row.node, row.aggregate ? undefined : row.index);
    g.addEventListener("click", pick);
    g.addEventListener("keydown", (event) => {
      if (event.key === "Enter") pick();
    });
    svg.append(g);
  });
  return svg;
}
