// The DAG of a job or a workflow definition as SVG: layered left to right (a step's column is
// one past its deepest dependency), on_error / on_cancel steps in lanes of their own below.

import { h, s } from "./dom.js";
import { duration, statusIcon, statusLabel, stepTarget } from "./format.js";

const NODE_W = 210;
const NODE_H = 74;
const GAP_X = 56;
const GAP_Y = 18;
const PAD = 16;
const LANE_HEAD = 26;
const BRANCH_KINDS = ["on_error", "on_cancel"];
const LANE_TITLES = {
  on_error: "on_error — runs when the job fails",
  on_cancel: "on_cancel — runs when the job is cancelled",
};

/** Column of each step: 0 for roots, else one past its deepest dependency in `steps`. */
export function layers(steps) {
  const byName = new Map(steps.map((step) => [step.name, step]));
  const memo = new Map();
  const depth = (name, seen) => {
    if (memo.has(name)) return memo.get(name);
    if (seen.has(name)) return 0; // a cycle cannot load; draw it rather than loop
    seen.add(name);
    const deps = (byName.get(name).depends || []).filter((d) => byName.has(d));
    const value = deps.length ? 1 + Math.max(...deps.map((d) => depth(d, seen))) : 0;
    memo.set(name, value);
    return value;
  };
  for (const step of steps) depth(step.name, new Set());
  return memo;
}

/** Positions {name: {x, y}} of `steps` in columns, each column ordered to follow its parents. */
export function place(steps, top = 0) {
  const column = layers(steps);
  const columns = [];
  for (const step of steps) (columns[column.get(step.name)] ||= []).push(step);
  const row = new Map();
  columns.forEach((members, c) => {
    if (c > 0) {
      const mean = (step) => {
        const rows = (step.depends || []).filter((d) => row.has(d)).map((d) => row.get(d));
        return rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : 0;
      };
      members = members.map((step, i) => [mean(step), i, step]).sort((a, b) => a[0] - b[0] || a[1] - b[1]).map((e) => e[2]);
    }
    members.forEach((step, r) => row.set(step.name, r));
  });
  const at = new Map();
  for (const step of steps) {
    at.set(step.name, {
      x: PAD + column.get(step.name) * (NODE_W + GAP_X),
      y: top + row.get(step.name) * (NODE_H + GAP_Y),
    });
  }
  const rows = Math.max(0, ...Array.from(row.values()).map((r) => r + 1));
  // No steps, no size (rather than the negative one the gaps would give: an SVG error).
  const width = columns.length ? PAD * 2 + columns.length * (NODE_W + GAP_X) - GAP_X : 0;
  return { at, width, height: rows ? rows * (NODE_H + GAP_Y) - GAP_Y : 0 };
}

function clip(text, max) {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The second and third lines of a node: what it is doing, and how far it got. */
function runLines(step) {
  const status = statusLabel(step.status);
  const attempt = step.attempts > 1 ? ` · attempt ${step.attempts}` : "";
  const first = `${status}${attempt}`;
  if (step.children) {
    const c = step.children;
    const failed = c.failed ? `, ${c.failed} failed` : "";
    const cancelled = c.cancelled ? `, ${c.cancelled} cancelled` : "";
    if (step.join) return [first, `${step.join.succeeded} of ${step.join.needed} needed${failed}${cancelled}`];
    if (step.reduce && step.reduce.batches !== undefined) return [first, `${c.completed} of ${c.total} done · ${step.reduce.batches} reduced`];
    return [first, `${c.completed} of ${c.total} done${failed}${cancelled}`];
  }
  if (step.status === "skipped") return [first, `when ${step.when} was false`];
  if (step.recovers) return [first, `fallback of ${step.recovers}`];
  if (step.status === "recovered") return [first, `by fallback ${step.fallback}`];
  if (step.status === "compensating" || step.status === "compensated") return [first, `undone by ${step.compensate}`];
  return [first, step.elapsed !== undefined && step.elapsed !== null ? duration(step.elapsed) : ""];
}

function definitionLines(step) {
  const where = stepTarget(step);
  const policy = [`retries ${step.retries ?? 0}`];
  if (step.timeout) policy.push(`timeout ${duration(step.timeout)}`);
  if (step.when) policy.unshift(`when ${step.when}`);
  return [where, policy.join(" · ")];
}

/** The name of a step's compensation: the job page gives it, the definition its whole spec. */
function undoName(step) {
  return typeof step.compensate === "string" ? step.compensate : step.compensate?.name;
}

function node(step, pos, options) {
  const run = options.mode === "run";
  const status = run ? step.status || "pending" : "pending";
  const [second, third] = run ? runLines(step) : definitionLines(step);
  const kind = step.kind || "step";
  const undo = undoName(step);
  const undoes = undo ? `, compensated by ${undo} if the job fails` : "";
  const label = `${step.name}: ${run ? second : kind}${third ? `, ${third}` : ""}${undoes}`;
  const group = s(
    "g",
    {
      class: `node kind-${kind} status-${status}${options.selected === step.name ? " selected" : ""}`,
      transform: `translate(${pos.x},${pos.y})`,
      "data-step": step.name,
      "data-status": run ? status : undefined,
      "data-kind": kind,
      "data-compensate": undo,
      tabindex: 0,
      role: "button",
      "aria-label": label,
    },
    s("title", {}, label),
    s("rect", { class: "box", width: NODE_W, height: NODE_H, rx: 8 }),
    run ? statusIcon(status, { x: 10, y: 10, size: 16 }) : null,
    s("text", { class: "name", x: run ? 32 : 12, y: 23 }, clip(step.name, (run ? 22 : 25) - (kind === "step" ? 0 : 5) - (undo ? 7 : 0))),
    s("text", { class: "line", x: 12, y: 45 }, clip(second, 30)),
    s("text", { class: "line muted", x: 12, y: 63 }, clip(third || "", 30)),
  );
  if (kind !== "step") {
    group.append(s("text", { class: "kind", x: NODE_W - 8, y: undo ? 13 : 15, "text-anchor": "end" }, kind));
  }
  if (undo) {
    // The compensation: an undo arrow and its name, in the node's top right corner.
    group.append(s("text", { class: "undo", x: NODE_W - 8, y: kind === "step" ? 15 : 26, "text-anchor": "end" }, `↶ ${clip(undo, 10)}`));
  }
  if (options.onSelect) {
    const pick = () => options.onSelect(step.name);
    group.addEventListener("click", pick);
    group.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        pick();
      }
    });
  }
  return group;
}

/** True when a straight line at height `y` from `x1` to `x2` would cross a node. */
function blocked(at, y, x1, x2) {
  for (const pos of at.values()) {
    if (pos.x < x2 && pos.x + NODE_W > x1 && y > pos.y - 4 && y < pos.y + NODE_H + 4) return true;
  }
  return false;
}

/** The path of an edge: a curve to the next column; across columns, straight along the
 * source's row through the empty space, then a curve (or one long curve when a node is in the way). */
function route(at, x1, y1, x2, y2) {
  const bend = x2 - GAP_X;
  if (bend - x1 > GAP_X && !blocked(at, y1, x1, bend)) {
    const mid = (bend + x2) / 2;
    return `M${x1},${y1} H${bend} C${mid},${y1} ${mid},${y2} ${x2},${y2}`;
  }
  const mid = (x1 + x2) / 2;
  return `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`;
}

function edges(steps, at) {
  const paths = [];
  // An edge out of a skipped step is a branch not taken: drawn dashed.
  const skipped = new Set(steps.filter((step) => step.status === "skipped").map((step) => step.name));
  for (const step of steps) {
    const to = at.get(step.name);
    for (const dep of step.depends || []) {
      const from = at.get(dep);
      if (!from) continue;
      paths.push(s("path", {
        class: step.recovers ? "edge fallback" : skipped.has(dep) ? "edge skipped" : "edge", d: route(at, from.x + NODE_W, from.y + NODE_H / 2, to.x - 4, to.y + NODE_H / 2),
        "marker-end": "url(#arrow)", "data-from": dep, "data-to": step.name,
      }));
    }
  }
  return paths;
}

/** A definition's steps with each fallback as a node after its step (a job's steps list them). */
function withFallbacks(steps) {
  const out = [];
  for (const step of steps) {
    out.push(step);
    if (step.fallback && typeof step.fallback === "object") {
      out.push({ ...step.fallback, kind: "fallback", depends: [step.name], recovers: step.name });
    }
  }
  return out;
}

/**
 * The graph of `steps` (the steps endpoint's or the definition's) in a scrolling box.
 * options: mode "run" | "definition", selected (a step name), onSelect(name).
 */
export function dag(steps, options = {}) {
  steps = withFallbacks(steps);
  const main = steps.filter((step) => !BRANCH_KINDS.includes(step.kind));
  const parts = [];
  const layout = place(main, PAD);
  let width = layout.width;
  let bottom = PAD + layout.height;
  parts.push(...edges(main, layout.at), ...main.map((step) => node(step, layout.at.get(step.name), options)));
  for (const kind of BRANCH_KINDS) {
    const lane = steps.filter((step) => step.kind === kind);
    if (!lane.length) continue;
    const top = bottom + PAD + LANE_HEAD;
    const branch = place(lane, top);
    width = Math.max(width, branch.width, 320);
    parts.push(
      s("rect", {
        class: `lane lane-${kind}`, x: 4, y: top - LANE_HEAD, rx: 8, "data-lane": kind,
        width: Math.max(branch.width, 320) - 8, height: branch.height + LANE_HEAD + 8,
      }),
      s("text", { class: "lane-title", x: PAD, y: top - 8 }, LANE_TITLES[kind]),
      ...edges(lane, branch.at),
      ...lane.map((step) => node(step, branch.at.get(step.name), options)),
    );
    bottom = top + branch.height + 8;
  }
  const height = bottom + PAD;
  const svg = s(
    "svg",
    { class: "dag", width, height, viewBox: `0 0 ${width} ${height}`, role: "group", "aria-label": "Steps of the job" },
    s("defs", {}, s(
      "marker",
      { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" },
      s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }),
    )),
    parts,
  );
  return h("div", { class: "dag-scroll" }, svg);
}
