// A Gantt strip of the step attempts: one row per step, one bar per attempt, so a slow step
// or a long retry wait (the dashed gap between two bars) shows at a glance. A step that sends
// no request has one bar for its whole span: a task step's, while its children run, and a
// waiting step's, until its signal came.

import { h, s } from "./dom.js";
import { duration, ms, statusLabel } from "./format.js";

const LABEL_W = 170;
const ROW_H = 24;
const BAR_H = 14;
const TRACK_W = 900;
const AXIS_H = 22;

/** A step with no request of its own, drawn as one bar from its start to its end. */
function spanned(step) {
  return (step.kind === "task" || step.wait) && Boolean(step.started_at);
}

function span(job, steps, now) {
  const starts = [ms(job.submitted_at)];
  const ends = [ms(job.finished_at)];
  for (const step of steps) {
    starts.push(ms(step.started_at));
    ends.push(ms(step.finished_at));
    for (const attempt of step.history || []) {
      starts.push(ms(attempt.dispatched_at));
      ends.push(ms(attempt.finished_at));
    }
  }
  const start = Math.min(...starts.filter(Number.isFinite));
  const finite = ends.filter(Number.isFinite);
  const end = job.finished_at ? Math.max(...finite) : Math.max(now, ...finite);
  return [start, Math.max(end, start + 1)];
}

function bar(attempt, x, y, width, endless) {
  const outcome = attempt.outcome || "running";
  const took = attempt.elapsed !== undefined && attempt.elapsed !== null ? duration(attempt.elapsed) : "running";
  const error = attempt.error ? ` — ${String(attempt.error).slice(0, 200)}` : "";
  return s(
    "rect",
    {
      class: `bar outcome-${outcome}${endless ? " open" : ""}`, x, y, width: Math.max(width, 2), height: BAR_H, rx: 3,
      "data-attempt": attempt.attempt, "data-outcome": outcome,
    },
    s("title", {}, `attempt ${attempt.attempt}: ${statusLabel(outcome)}, ${took}${error}`),
  );
}

function spanBar(step, x, y, width, endless) {
  const outcome = step.status || "running";
  const took = step.elapsed !== undefined && step.elapsed !== null ? duration(step.elapsed) : "running";
  const what = step.kind === "task" ? `its child jobs ran ${took}` : `waited ${took} for its signal`;
  return s(
    "rect",
    {
      class: `bar span outcome-${outcome}${endless ? " open" : ""}`, x, y, width: Math.max(width, 2), height: BAR_H, rx: 3,
      "data-span": step.kind === "task" ? "task" : "wait", "data-outcome": outcome,
    },
    s("title", {}, `${step.name}: ${what} (${statusLabel(outcome)})`),
  );
}

/** The timeline of `job` (the steps endpoint's answer); `now` in ms for open attempts. */
export function timeline(job, now = Date.now()) {
  const steps = job.steps.filter((step) => (step.history || []).length || spanned(step));
  if (!steps.length) return h("p", { class: "muted" }, "No step has been dispatched yet.");
  const [start, end] = span(job, steps, now);
  const scale = TRACK_W / (end - start);
  const xOf = (t) => LABEL_W + (t - start) * scale;
  const height = AXIS_H + steps.length * ROW_H + 4;
  const rows = steps.map((step, i) => {
    const y = AXIS_H + i * ROW_H;
    const parts = [s("text", { class: "label", x: LABEL_W - 8, y: y + 16, "text-anchor": "end" }, step.name.length > 22 ? `${step.name.slice(0, 21)}…` : step.name)];
    if (!(step.history || []).length) {
      const from = ms(step.started_at);
      const open = !step.finished_at;
      const to = open ? (job.finished_at ? end : now) : ms(step.finished_at);
      parts.push(spanBar(step, xOf(from), y + 5, (to - from) * scale, open));
      return s("g", { class: "row", "data-step": step.name }, parts);
    }
    let previousEnd = null;
    for (const attempt of step.history) {
      const from = ms(attempt.dispatched_at);
      const open = !attempt.finished_at;
      const to = open ? (job.finished_at ? end : now) : ms(attempt.finished_at);
      if (previousEnd !== null && from > previousEnd) {
        const waited = `waited ${duration((from - previousEnd) / 1000)} before attempt ${attempt.attempt}`;
        parts.push(s("line", { class: "wait", x1: xOf(previousEnd), x2: xOf(from), y1: y + 12, y2: y + 12 }, s("title", {}, waited)));
      }
      parts.push(bar(attempt, xOf(from), y + 5, (to - from) * scale, open));
      previousEnd = to;
    }
    return s("g", { class: "row", "data-step": step.name }, parts);
  });
  const axis = s(
    "g",
    { class: "axis" },
    s("line", { x1: LABEL_W, x2: LABEL_W + TRACK_W, y1: AXIS_H - 4, y2: AXIS_H - 4 }),
    s("text", { x: LABEL_W, y: 12 }, "0 s"),
    s("text", { x: LABEL_W + TRACK_W / 2, y: 12, "text-anchor": "middle" }, duration((end - start) / 2000)),
    s("text", { x: LABEL_W + TRACK_W, y: 12, "text-anchor": "end" }, duration((end - start) / 1000)),
  );
  const width = LABEL_W + TRACK_W + 12;
  return h(
    "div",
    { class: "timeline-scroll" },
    s("svg", { class: "timeline", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "Timeline of step attempts" }, axis, rows),
  );
}
