// How values read on the page: statuses (icon + label, never colour alone), times, durations.

import { h, s } from "./dom.js";

export const EVENT_TYPES = [
  "job.scheduled", "job.debounced", "job.queued", "job.started", "job.completed", "job.failed", "job.cancelled",
  "step.dispatched", "step.completed", "step.failed", "step.retrying", "step.skipped",
  "step.waiting", "step.signalled", "step.throttled",
  "step.recovered", "job.compensating", "step.compensating", "step.compensated",
  "step.compensation_failed", "job.paused", "job.resumed",
];

export const JOB_STATUSES = ["scheduled", "queued", "running", "completed", "failed", "cancelled"];
export const CHILD_STATUSES = ["pending", "running", "completed", "failed", "cancelled"];

// Each icon is drawn in a 16x16 box; the shapes differ, so statuses read without colour.
const ICONS = {
  // A clock: waits for its start time.
  scheduled: [
    ["circle", { cx: 8, cy: 8, r: 6, fill: "none", "stroke-width": 2 }],
    ["path", { d: "M8 4.5V8l2.5 1.5", fill: "none", "stroke-width": 2 }],
  ],
  // An hourglass: waits for a signal.
  waiting: [
    ["path", { d: "M4 2h8M4 14h8M5 2c0 4 6 4 6 6s-6 2-6 6M11 2c0 4-6 4-6 6s6 2 6 6", fill: "none", "stroke-width": 1.6 }],
  ],
  pending: [["circle", { cx: 8, cy: 8, r: 5.5, fill: "none", "stroke-width": 2 }]],
  // A line of three: waits its turn under a concurrency limit.
  queued: [
    ["path", { d: "M2.5 4h11M2.5 8h11M2.5 12h6", fill: "none", "stroke-width": 2 }],
  ],
  running: [
    ["circle", { cx: 8, cy: 8, r: 5.5, fill: "none", "stroke-width": 2, opacity: 0.3 }],
    ["path", { d: "M8 2.5a5.5 5.5 0 0 1 5.5 5.5", fill: "none", "stroke-width": 2, class: "spin" }],
  ],
  retrying: [
    ["path", { d: "M13 8a5 5 0 1 1-1.5-3.6", fill: "none", "stroke-width": 2 }],
    ["path", { d: "M12.5 1.5v3.5H9", fill: "none", "stroke-width": 2 }],
  ],
  completed: [
    ["circle", { cx: 8, cy: 8, r: 7, stroke: "none" }],
    ["path", { d: "M4.5 8.2 7 10.7l4.6-5", fill: "none", "stroke-width": 2, class: "knock" }],
  ],
  failed: [
    ["circle", { cx: 8, cy: 8, r: 7, stroke: "none" }],
    ["path", { d: "M5.3 5.3l5.4 5.4M10.7 5.3l-5.4 5.4", "stroke-width": 2, class: "knock" }],
  ],
  recovered: [
    ["circle", { cx: 8, cy: 8, r: 7, stroke: "none" }],
    ["path", { d: "M11.5 6.5A4 4 0 1 0 12 9.5M11.8 3.8v3h-3", fill: "none", "stroke-width": 1.8, class: "knock" }],
  ],
  skipped: [
    ["path", { d: "M2.5 4.5 7 8l-4.5 3.5zM8.5 4.5 13 8l-4.5 3.5z", "stroke-width": 1.2 }],
  ],
  cancelled: [
    ["circle", { cx: 8, cy: 8, r: 6, fill: "none", "stroke-width": 2 }],
    ["path", { d: "M4 12 12 4", "stroke-width": 2 }],
  ],
  // An undo arrow: turning back while the compensation runs, settled in a disc once done.
  compensating: [
    ["path", { d: "M4 6.5h6a3.5 3.5 0 0 1 0 7H7", fill: "none", "stroke-width": 2 }],
    ["path", { d: "M6.5 3.5 3.5 6.5l3 3", fill: "none", "stroke-width": 2 }],
  ],
  compensated: [
    ["circle", { cx: 8, cy: 8, r: 7, stroke: "none" }],
    ["path", { d: "M5 7h4.5a2.3 2.3 0 0 1 0 4.6H7.5M6.8 5 4.8 7l2 2", fill: "none", "stroke-width": 1.8, class: "knock" }],
  ],
};

const LABELS = {
  scheduled: "scheduled", queued: "queued", waiting: "waiting for a signal", pending: "pending", running: "running", retrying: "retrying", completed: "completed",
  failed: "failed", cancelled: "cancelled", timeout: "timed out", retried: "retried",
  skipped: "skipped", recovered: "recovered", compensating: "compensating",
  compensated: "compensated", throttled: "throttled", held: "held", expired: "expired", free: "free", paused: "paused",
};
// A partition's lease (the cluster page): held like completed, expired like failed, free like pending.
ICONS.held = ICONS.completed;
ICONS.expired = ICONS.failed;
ICONS.free = ICONS.pending;
// A paused job waits as a queued one does, until someone resumes it.
ICONS.paused = ICONS.queued;
// A throttled step waits for its turn under a rate limit: a clock, as a delayed start does.
ICONS.throttled = ICONS.scheduled;

/** The label of a status (or attempt outcome). */
export function statusLabel(status) {
  return LABELS[status] || String(status);
}

/** An inline SVG icon for a status; `x`/`y` place it inside another SVG. */
export function statusIcon(status, { size = 16, x, y } = {}) {
  const shapes = ICONS[status] || ICONS.pending;
  return s(
    "svg",
    { class: `icon status-${status}`, width: size, height: size, x, y, viewBox: "0 0 16 16", "aria-hidden": "true" },
    shapes.map(([tag, attrs]) => s(tag, attrs)),
  );
}

/** A status badge: icon and label, coloured by a class. */
export function statusBadge(status, attrs = {}) {
  return h("span", { class: `badge status-${status}`, ...attrs }, statusIcon(status), statusLabel(status));
}

/** " · starts <time>" for a job that waits for its start time (a delayed start), else nothing. */
export function startsAt(job) {
  return job.status === "scheduled" && job.start_at
    ? h("span", { class: "muted", "data-field": "start-at" }, " · starts ", time(job.start_at))
    : null;
}

/** Seconds as "850 ms", "12.3 s", "4 min 05 s", "2 h 03 min". */
export function duration(seconds) {
  if (seconds === undefined || seconds === null || Number.isNaN(seconds)) return "–";
  // A value that rounds up to the next unit is shown in it: 0.9996 s is "1.00 s", not "1000 ms",
  // and 59.96 s is "1 min 00 s", not "60.0 s".
  const millis = Math.round(seconds * 1000);
  if (millis < 1000) return `${millis} ms`;
  if (seconds < 59.95) return `${seconds.toFixed(seconds < 9.995 ? 2 : 1)} s`;
  const whole = Math.max(60, Math.floor(seconds));
  const minutes = Math.floor(whole / 60);
  if (minutes < 60) return `${minutes} min ${String(whole % 60).padStart(2, "0")} s`;
  const hours = Math.floor(minutes / 60);
  return `${hours} h ${String(minutes % 60).padStart(2, "0")} min`;
}

/** An ISO time as the browser's local date and time, with the UTC original as a tooltip. */
export function time(iso) {
  if (!iso) return "–";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  return h("time", { datetime: iso, title: iso }, date.toLocaleString(undefined, {
    year: "numeric", month: "short", day: "numeric",
    hour: "2-digit", minute: "2-digit", second: "2-digit",
  }));
}

/** An ISO time as the local time of day only (for tables of attempts), date in the tooltip. */
export function clock(iso) {
  if (!iso) return "–";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  const text = date.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
  return h("time", { datetime: iso, title: iso }, `${text}.${String(date.getMilliseconds()).padStart(3, "0")}`);
}

/** How long ago an ISO time was: "3 min ago". */
export function age(iso, now = Date.now()) {
  const seconds = (now - ms(iso)) / 1000;
  if (!Number.isFinite(seconds)) return "–";
  const units = [[86400, "d"], [3600, "h"], [60, "min"], [1, "s"]];
  const [size, unit] = units.find(([size]) => Math.max(seconds, 1) >= size);
  return `${Math.floor(Math.max(seconds, 0) / size)} ${unit} ago`;
}

/** Milliseconds since the epoch of an ISO time (NaN when absent). */
export function ms(iso) {
  return iso ? new Date(iso).getTime() : NaN;
}

/** An error as one line of text: a string as it is, {"step", "message"} as "step: message",
 * anything else as JSON. */
export function errorText(error) {
  if (error === undefined || error === null) return "";
  if (typeof error === "string") return error;
  if (typeof error.message === "string") return error.step ? `${error.step}: ${error.message}` : error.message;
  return JSON.stringify(error);
}

/** An HTTP step's call as text: the URL (or "METHOD URL" when given as an object). */
export function httpCall(http) {
  return typeof http === "string" ? http : `${http.method || "POST"} ${http.url}`;
}

/** Where a step's work goes: its task, its HTTP call, the signal it waits for, or its queue. */
export function stepTarget(step) {
  if (step.task) return `task ${step.task.name}`;
  if (step.http) return httpCall(step.http);
  if (step.wait) return "waits for a signal";
  return `queue ${step.queue || step.name}`;
}

/** The first 8 characters of an id, with the whole id as a tooltip. */
export function shortId(id) {
  return h("code", { title: id }, String(id).slice(0, 8));
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
