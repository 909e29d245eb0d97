// timeline.js: one bar per attempt, and one bar for the whole span of a step that sends no
// request (a task step while its children run, a waiting step until its signal).

import assert from "node:assert/strict";
import { test } from "node:test";

import { byClass } from "./fakedom.js";
import { timeline } from "../workflow_manager/ui/timeline.js";

const at = (seconds) => new Date(Date.UTC(2026, 10, 28, 9, 0, seconds)).toISOString();

const job = {
  submitted_at: at(0),
  finished_at: at(20),
  steps: [
    {
      name: "fetch", kind: "step", status: "completed", started_at: at(0), finished_at: at(1),
      history: [{ attempt: 1, outcome: "completed", dispatched_at: at(0), finished_at: at(1), elapsed: 1 }],
    },
    { name: "approve", kind: "step", wait: true, status: "completed", started_at: at(1), finished_at: at(12), elapsed: 11 },
    { name: "each", kind: "task", status: "completed", started_at: at(12), finished_at: at(20), elapsed: 8 },
    { name: "later", kind: "step", status: "pending" },
  ],
};

test("a waiting step and a task step get a bar for their whole span", () => {
  const svg = timeline(job, Date.parse(at(30)));
  const rows = byClass(svg, "row").map((row) => row.getAttribute("data-step"));
  assert.deepEqual(rows, ["fetch", "approve", "each"]); // a step that never started has none
  const spans = byClass(svg, "span");
  assert.deepEqual(spans.map((bar) => bar.getAttribute("data-span")), ["wait", "task"]);
  const [wait, task] = spans;
  // 11 of the job's 20 seconds, on the 900-pixel track.
  assert.equal(Math.round(wait.getAttribute("width")), Math.round((11 / 20) * 900));
  assert.equal(Math.round(task.getAttribute("width")), Math.round((8 / 20) * 900));
  assert.match(wait.textContent, /approve: waited 11\.0 s for its signal/);
  assert.match(task.textContent, /each: its child jobs ran 8\.00 s/);
});

test("a step still waiting has an open bar up to now", () => {
  const running = {
    submitted_at: at(0),
    steps: [{ name: "approve", kind: "step", wait: true, status: "waiting", started_at: at(0), elapsed: 5 }],
  };
  const [bar] = byClass(timeline(running, Date.parse(at(5))), "span");
  assert.match(bar.getAttribute("class"), /\bopen\b/);
  assert.equal(bar.getAttribute("data-outcome"), "waiting");
});
