// format.js: how durations, times, ages, errors and statuses read on the page.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { byClass } from "./fakedom.js";
import {
  UUID,
  age,
  clock,
  duration,
  errorText,
  httpCall,
  ms,
  shortId,
  startsAt,
  statusBadge,
  statusIcon,
  statusLabel,
  stepTarget,
  time,
} from "../workflow_manager/ui/format.js";

describe("duration", () => {
  const cases = [
    [undefined, "–"],
    [null, "–"],
    [NaN, "–"],
    [0, "0 ms"],
    [0.0004, "0 ms"],
    [0.85, "850 ms"],
    [0.9994, "999 ms"],
    // Rounding up to the next unit shows that unit, never "1000 ms" or "60.0 s".
    [0.9996, "1.00 s"],
    [1, "1.00 s"],
    [9.5, "9.50 s"],
    [9.996, "10.0 s"],
    [12.34, "12.3 s"],
    [59.94, "59.9 s"],
    [59.96, "1 min 00 s"],
    [60, "1 min 00 s"],
    [245.9, "4 min 05 s"],
    [3599.9, "59 min 59 s"],
    [3600, "1 h 00 min"],
    [7380, "2 h 03 min"],
    [3 * 86400, "72 h 00 min"],
  ];
  for (const [seconds, expected] of cases) {
    test(`${seconds} s reads "${expected}"`, () => assert.equal(duration(seconds), expected));
  }
});

describe("age", () => {
  const now = Date.parse("2026-11-28T12:00:00Z");
  const cases = [
    ["2026-11-28T11:59:58.5Z", "1 s ago"],
    ["2026-11-28T11:57:00Z", "3 min ago"],
    ["2026-11-28T09:59:00Z", "2 h ago"],
    ["2026-11-25T12:00:00Z", "3 d ago"],
    // A time a hair in the future (clocks apart) is "now", not a negative age.
    ["2026-11-28T12:00:05Z", "0 s ago"],
    ["2026-11-28T12:00:00Z", "0 s ago"],
    [undefined, "–"],
    ["", "–"],
    ["not a time", "–"],
  ];
  for (const [iso, expected] of cases) {
    test(`${iso} reads "${expected}"`, () => assert.equal(age(iso, now), expected));
  }
});

test("ms is the epoch milliseconds of a time, NaN without one", () => {
  assert.equal(ms("1970-01-01T00:00:01.5Z"), 1500);
  assert.ok(Number.isNaN(ms(undefined)));
  assert.ok(Number.isNaN(ms("")));
});

describe("time and clock", () => {
  test("no time reads as a dash", () => {
    for (const format of [time, clock]) {
      assert.equal(format(undefined), "–");
      assert.equal(format(""), "–");
    }
  });

  test("an unparsable time is shown as it is", () => {
    assert.equal(time("yesterday"), "yesterday");
    assert.equal(clock("yesterday"), "yesterday");
  });

  test("a time is a <time> element with the original in datetime and the tooltip", () => {
    const iso = "2026-11-28T07:05:09.045Z";
    for (const node of [time(iso), clock(iso)]) {
      assert.equal(node.tagName, "time");
      assert.equal(node.getAttribute("datetime"), iso);
      assert.equal(node.getAttribute("title"), iso);
    }
  });

  test("clock shows milliseconds, padded to three digits", () => {
    assert.match(clock("2026-11-28T07:05:09.045Z").textContent, /:\d\d\.045$/);
    assert.match(clock("2026-11-28T07:05:09Z").textContent, /\.000$/);
  });
});

describe("errorText", () => {
  const cases = [
    [undefined, ""],
    [null, ""],
    ["boom", "boom"],
    [{ message: "disk full" }, "disk full"],
    [{ step: "s2", message: "disk full" }, "s2: disk full"],
    [{ code: 7 }, '{"code":7}'],
    [42, "42"],
  ];
  for (const [error, expected] of cases) {
    test(`${JSON.stringify(error)} reads "${expected}"`, () => assert.equal(errorText(error), expected));
  }
});

test("httpCall shows a URL, or its method and URL (POST by default)", () => {
  assert.equal(httpCall("https://svc/x"), "https://svc/x");
  assert.equal(httpCall({ url: "https://svc/x" }), "POST https://svc/x");
  assert.equal(httpCall({ method: "PUT", url: "https://svc/x" }), "PUT https://svc/x");
});

test("stepTarget says where a step's work goes, and what a waiting step waits for", () => {
  assert.equal(stepTarget({ name: "fan", task: { name: "per_item" } }), "task per_item");
  assert.equal(stepTarget({ name: "hook", http: { url: "https://svc/x" } }), "POST https://svc/x");
  assert.equal(stepTarget({ name: "approve", wait: true }), "waits for a signal");
  assert.equal(stepTarget({ name: "count", queue: "counters" }), "queue counters");
  assert.equal(stepTarget({ name: "count" }), "queue count");
});

test("statusLabel names known statuses and shows any other as it is", () => {
  assert.equal(statusLabel("waiting"), "waiting for a signal");
  assert.equal(statusLabel("timeout"), "timed out");
  assert.equal(statusLabel("paused"), "paused");
  assert.equal(statusLabel(undefined), "undefined");
});

describe("statusIcon and statusBadge", () => {
  test("an icon is an SVG of the status's shapes, placed where asked", () => {
    const icon = statusIcon("failed", { size: 20, x: 3, y: 4 });
    assert.equal(icon.tagName, "svg");
    assert.equal(icon.getAttribute("class"), "icon status-failed");
    assert.equal(icon.getAttribute("width"), "20");
    assert.equal(icon.getAttribute("x"), "3");
    assert.deepEqual(icon.childNodes.map((c) => c.tagName), ["circle", "path"]);
  });

  test("an unknown status draws pending's shape; a lease's reuse the step shapes", () => {
    const shapes = (status) => JSON.stringify(statusIcon(status).childNodes.map((c) => [...c.attributes]));
    assert.equal(shapes("no-such-status"), shapes("pending"));
    assert.equal(shapes("held"), shapes("completed"));
    assert.equal(shapes("expired"), shapes("failed"));
    assert.equal(shapes("free"), shapes("pending"));
    assert.notEqual(shapes("completed"), shapes("failed"));
  });

  test("a badge carries the icon and the label (never colour alone)", () => {
    const badge = statusBadge("retrying", { id: "b" });
    assert.equal(badge.getAttribute("class"), "badge status-retrying");
    assert.equal(badge.getAttribute("id"), "b");
    assert.equal(byClass(badge, "icon").length, 1);
    assert.equal(badge.textContent, "retrying");
  });
});

test("startsAt shows only for a job that waits for its start time", () => {
  const start_at = "2026-11-28T09:00:00Z";
  assert.equal(startsAt({ status: "running", start_at }), null);
  assert.equal(startsAt({ status: "scheduled" }), null);
  const line = startsAt({ status: "scheduled", start_at });
  assert.equal(line.getAttribute("data-field"), "start-at");
  assert.ok(line.textContent.startsWith(" · starts "));
});

test("shortId shows 8 characters and keeps the whole id in the tooltip", () => {
  const id = "3f2a9c1e-0000-4000-8000-000000000001";
  const node = shortId(id);
  assert.equal(node.textContent, "3f2a9c1e");
  assert.equal(node.getAttribute("title"), id);
});

test("UUID accepts a UUID in either case and nothing around it", () => {
  assert.ok(UUID.test("3F2A9C1E-0000-4000-8000-000000000001"));
  assert.ok(!UUID.test("3f2a9c1e-0000-4000-8000-00000000000"));
  assert.ok(!UUID.test(" 3f2a9c1e-0000-4000-8000-000000000001"));
  assert.ok(!UUID.test("job-3f2a9c1e"));
});
