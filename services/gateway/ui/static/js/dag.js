// A workflow's graph as SVG: nodes in columns by dependency depth (a node one column
// right of the deepest node it needs; an error handler right of the node it handles),
// edges from each need (solid) and to each error route (dashed), coloured by state
// through CSS classes. layout() is pure; draw() builds the SVG once and update() only
// changes classes and texts, so the picture does not flicker as a run moves on.

import {s} from "./dom.js";

const BOX_W = 168;
const BOX_H = 46;
const GAP_X = 56;
const GAP_Y = 18;
const PAD = 12;
export const MAX_DRAWN = 400;

function depths(graph) {
  const byId = new Map(graph.map((n) => [n.id, n]));
  const handled = new Map();  // handler id -> ids of the nodes it handles
  for (const n of graph) {
    if (n.onError && byId.has(n.onError)) {
      handled.set(n.onError, [...(handled.get(n.onError) || []), n.id]);
    }
  }
  const depth = new Map();
  const visiting = new Set();
  const walk = (id) => {  // recursion is bounded: MAX_DRAWN nodes at most are drawn
    if (depth.has(id)) return depth.get(id);
    if (visiting.has(id)) return 0;  // a cycle (an invalid spec): cut it
    visiting.add(id);
    const before = [...byId.get(id).needs, ...(handled.get(id) || [])].filter((d) => byId.has(d));
    const d = before.length ? 1 + Math.max(...before.map(walk)) : 0;
    visiting.delete(id);
    depth.set(id, d);
    return d;
  };
  graph.forEach((n) => walk(n.id));
  return depth;
}

function orderLayers(graph, depth) {
  const layers = [];
  for (const n of graph) (layers[depth.get(n.id)] ||= []).push(n);
  const row = new Map();
  layers.forEach((layer, d) => {
    if (d > 0) {  // one barycentre pass: a node near the nodes it needs
      const centre = (n) => {
        const rows = n.needs.filter((x) => row.has(x)).map((x) => row.get(x));
        return rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : Infinity;
      };
      layer.sort((a, b) => centre(a) - centre(b));
    }
    layer.forEach((n, i) => row.set(n.id, i));
  });
  return layers.filter(Boolean);
}

/**
 * Place the nodes of graph ([{id, needs, onError}]): {width, height, boxes: Map(id ->
 * {x, y, w, h, depth}), edges: [{from, to, kind: "needs" | "error"}]}.
 */
export function layout(graph) {
  const depth = depths(graph);
  const layers = orderLayers(graph, depth);
  const tallest = Math.max(1, ...layers.map((l) => l.length));
  const boxes = new Map();
  layers.forEach((layer, column) => {
    const offset = ((tallest - layer.length) * (BOX_H + GAP_Y)) / 2;
    layer.forEach((n, i) => boxes.set(n.id, {
      x: PAD + column * (BOX_W + GAP_X), y: PAD + offset + i * (BOX_H + GAP_Y),
      w: BOX_W, h: BOX_H, depth: depth.get(n.id)}));
  });
  const edges = [];
  for (const n of graph) {
    for (const need of n.needs) if (boxes.has(need)) edges.push({from: need, to: n.id, kind: "needs"});
    if (n.onError && boxes.has(n.onError)) edges.push({from: n.id, to: n.onError, kind: "error"});
  }
  return {width: PAD * 2 + layers.length * (BOX_W + GAP_X) - GAP_X,
          height: PAD * 2 + tallest * (BOX_H + GAP_Y) - GAP_Y, boxes, edges};
}

function edgePath(a, b) {
  const x1 = a.x + a.w;
  const y1 = a.y + a.h / 2;
  const x2 = b.x;
  const y2 = b.y + b.h / 2;
  if (x2 <= x1) {  // same column or backwards: bend around below
    const low = Math.max(a.y + a.h, b.y + b.h) + GAP_Y / 2;
    return `M ${x1} ${y1} C ${x1 + 30} ${low}, ${x2 - 30} ${low}, ${x2} ${y2}`;
  }
  const mid = (x1 + x2) / 2;
  return `M ${x1} ${y1} C ${mid} ${y1}, ${mid} ${y2}, ${x2} ${y2}`;
}

function clip(text, max) {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The SVG of graph, laid out; each node is <g class="node st-..." data-node="id">. */
export function draw(graph) {
  const placed = layout(graph);
  const svg = s("svg", {class: "dag", width: placed.width, height: placed.height,
                        viewBox: `0 0 ${placed.width} ${placed.height}`, role: "img",
                        "aria-label": "the workflow's graph"});
  svg.append(s("defs", {}, s("marker", {id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
                                        markerWidth: 7, markerHeight: 7, orient: "auto"},
                           s("path", {d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead"}))));
  for (const e of placed.edges) {
    svg.append(s("path", {class: `edge edge-${e.kind}`, "data-from": e.from, "data-to": e.to,
                          d: edgePath(placed.boxes.get(e.from), placed.boxes.get(e.to)),
                          "marker-end": "url(#arrow)"}));
  }
  for (const n of graph) {
    const b = placed.boxes.get(n.id);
    svg.append(s("g", {class: "node st-pending", "data-node": n.id, tabindex: 0},
      s("title", {}, n.id),
      s("rect", {x: b.x, y: b.y, width: b.w, height: b.h, rx: 7}),
      s("text", {class: "label", x: b.x + 10, y: b.y + 19}, clip(n.id, 22)),
      s("text", {class: "sub", x: b.x + 10, y: b.y + 36}, n.kind)));
  }
  return svg;
}

/** What a node's second line says: its state, and how many of a map's items are done
 * (its error is in the tooltip and the nodes' table). */
function subline(view) {
  if (view.lost?.length) return clip(`${view.shownStatus} · worker lost`, 25);
  const counted = view.total !== null && view.total !== undefined;
  return clip(counted ? `${view.shownStatus} · ${view.succeeded}/${view.total}` : view.shownStatus, 25);
}

/** Colour and label the drawn nodes from the run's node views (views: Map(id -> view));
 * a node with a task whose worker was lost is marked (class "lost", data-lost). */
export function update(svg, views) {
  for (const g of svg.querySelectorAll("g.node")) {
    const view = views.get(g.dataset.node);
    if (!view) continue;
    const lost = view.lost?.length > 0;
    g.setAttribute("class", `node st-${view.shownStatus}${lost ? " lost" : ""}`);
    g.dataset.status = view.shownStatus;
    if (lost) g.dataset.lost = "true";
    else delete g.dataset.lost;
    g.querySelector("text.sub").textContent = subline(view);
    const tip = [`${view.id} (${view.kind}${view.task ? `: ${view.task}` : ""})`, view.shownStatus];
    if (view.error) tip.push(view.error);
    if (lost) tip.push(`worker lost: ${view.lost.map((t) => t.worker || t.key).join(", ")}`);
    g.querySelector("title").textContent = tip.join("\n");
  }
}
