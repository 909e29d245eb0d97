// dag.js: the layered layout (columns by depth, rows following the parents) and the SVG drawn
// from it (nodes, edges, fallback nodes, on_error / on_cancel lanes).

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { byClass } from "./fakedom.js";
import { dag, layers, place } from "../workflow_manager/ui/dag.js";

// The layout's sizes (dag.js): a node is 210 x 74, 56 apart across and 18 down, 16 of padding.
const COLUMN = 210 + 56;
const ROW = 74 + 18;
const PAD = 16;

const step = (name, ...depends) => ({ name, depends });
const columnsOf = (steps) => Object.fromEntries(layers(steps));

describe("layers", () => {
  test("a root is in column 0, a step one past its deepest dependency", () => {
    const steps = [step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c"), step("e", "a", "d")];
    assert.deepEqual(columnsOf(steps), { a: 0, b: 1, c: 1, d: 2, e: 3 });
  });

  test("the order of the steps does not matter", () => {
    const steps = [step("d", "b", "c"), step("c", "a"), step("b", "a"), step("a")];
    assert.deepEqual(columnsOf(steps), { a: 0, b: 1, c: 1, d: 2 });
  });

  test("a dependency that is not among the steps is ignored", () => {
    assert.deepEqual(columnsOf([step("a", "elsewhere"), { name: "b" }]), { a: 0, b: 0 });
  });

  test("a cycle (which cannot load) is drawn rather than looped on", () => {
    const columns = columnsOf([step("a", "b"), step("b", "a")]);
    assert.deepEqual(Object.keys(columns).sort(), ["a", "b"]);
    assert.notEqual(columns.a, columns.b);
  });

  test("no steps, no columns", () => {
    assert.equal(layers([]).size, 0);
  });
});

describe("place", () => {
  test("a chain runs left to right on one row", () => {
    const { at, width, height } = place([step("a"), step("b", "a"), step("c", "b")], 5);
    assert.deepEqual(Object.fromEntries(at), {
      a: { x: PAD, y: 5 },
      b: { x: PAD + COLUMN, y: 5 },
      c: { x: PAD + 2 * COLUMN, y: 5 },
    });
    assert.equal(width, 2 * PAD + 3 * COLUMN - 56);
    assert.equal(height, 74);
  });

  test("a fan-out stacks its branches; the join sits in the next column", () => {
    const { at, height } = place([step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")]);
    assert.deepEqual(at.get("b"), { x: PAD + COLUMN, y: 0 });
    assert.deepEqual(at.get("c"), { x: PAD + COLUMN, y: ROW });
    assert.deepEqual(at.get("d"), { x: PAD + 2 * COLUMN, y: 0 });
    assert.equal(height, 2 * ROW - 18);
  });

  test("a column follows its parents' rows, so edges do not cross", () => {
    // x2 is listed first but its parent is below y2's: it goes below.
    const steps = [step("r1"), step("r2"), step("x2", "r2"), step("y1", "r1")];
    const { at } = place(steps);
    assert.equal(at.get("r1").y, 0);
    assert.equal(at.get("r2").y, ROW);
    assert.equal(at.get("y1").y, 0);
    assert.equal(at.get("x2").y, ROW);
  });

  test("steps with the same parents keep their order", () => {
    const { at } = place([step("a"), step("z", "a"), step("m", "a"), step("b", "a")]);
    assert.deepEqual(["z", "m", "b"].map((name) => at.get(name).y), [0, ROW, 2 * ROW]);
  });

  test("independent roots share column 0, one per row", () => {
    const { at, width } = place([step("a"), step("b")]);
    assert.deepEqual([at.get("a"), at.get("b")], [{ x: PAD, y: 0 }, { x: PAD, y: ROW }]);
    assert.equal(width, 2 * PAD + 210);
  });

  test("no steps take no room (never a negative size)", () => {
    const { at, width, height } = place([], 30);
    assert.equal(at.size, 0);
    assert.equal(width, 0);
    assert.equal(height, 0);
  });
});

describe("dag", () => {
  const svgOf = (box) => box.childNodes[0];
  const nodes = (box) => byClass(box, "node").map((g) => g.getAttribute("data-step"));
  const edges = (box) => byClass(box, "edge").map((p) => `${p.getAttribute("data-from")}->${p.getAttribute("data-to")}`);

  test("a job's steps are one node each, an edge for each dependency", () => {
    const steps = [
      { ...step("a"), status: "completed", elapsed: 1.5 },
      { ...step("b", "a"), status: "running", attempts: 2 },
      { ...step("c", "a", "b"), status: "pending" },
    ];
    const box = dag(steps, { mode: "run", selected: "b" });
    assert.equal(box.getAttribute("class"), "dag-scroll");
    assert.deepEqual(nodes(box), ["a", "b", "c"]);
    assert.deepEqual(edges(box).sort(), ["a->b", "a->c", "b->c"]);
    const [a, b] = byClass(box, "node");
    assert.equal(a.getAttribute("data-status"), "completed");
    assert.match(a.getAttribute("aria-label"), /^a: completed, 1\.50 s$/);
    assert.match(b.getAttribute("class"), / selected$/);
    assert.match(b.getAttribute("aria-label"), /attempt 2/);
    const svg = svgOf(box);
    assert.equal(svg.getAttribute("viewBox"), `0 0 ${svg.getAttribute("width")} ${svg.getAttribute("height")}`);
  });

  test("an edge out of a skipped step is dashed (a branch not taken)", () => {
    const box = dag([{ ...step("a"), status: "skipped", when: "x" }, step("b", "a")], { mode: "run" });
    assert.deepEqual(byClass(box, "skipped").map((p) => p.tagName), ["path"]);
  });

  test("a definition's fallback is a node after its step, joined by a fallback edge", () => {
    const steps = [step("a"), { ...step("b", "a"), fallback: { name: "b-fallback" } }];
    const box = dag(steps, { mode: "definition" });
    assert.deepEqual(nodes(box), ["a", "b", "b-fallback"]);
    assert.deepEqual(byClass(box, "fallback").map((p) => p.getAttribute("data-from")), ["b"]);
    const fallbackNode = byClass(box, "node")[2];
    assert.equal(fallbackNode.getAttribute("data-kind"), "fallback");
  });

  test("on_error and on_cancel steps get a lane each, below the main graph", () => {
    const steps = [
      step("a"),
      { ...step("notify"), kind: "on_error" },
      { ...step("cleanup"), kind: "on_cancel" },
      { ...step("page", "notify"), kind: "on_error" },
    ];
    const box = dag(steps, { mode: "definition" });
    const lanes = byClass(box, "lane");
    assert.deepEqual(lanes.map((lane) => lane.getAttribute("data-lane")), ["on_error", "on_cancel"]);
    const y = (name) => Number(/,(\d+)\)$/.exec(byClass(box, "node").find((g) => g.getAttribute("data-step") === name).getAttribute("transform"))[1]);
    assert.ok(y("notify") > y("a"));
    assert.equal(y("page"), y("notify"));
    assert.ok(y("cleanup") > y("notify"));
    assert.deepEqual(edges(box), ["notify->page"]);
    // Lanes are at least 320 wide, so their titles fit.
    assert.ok(Number(svgOf(box).getAttribute("width")) >= 320);
  });

  test("a node picked by click or by Enter calls onSelect with its step", () => {
    const picked = [];
    const box = dag([step("a")], { mode: "definition", onSelect: (name) => picked.push(name) });
    const [g] = byClass(box, "node");
    g.listeners.get("click")[0]();
    let prevented = false;
    g.listeners.get("keydown")[0]({ key: "Enter", preventDefault: () => (prevented = true) });
    g.listeners.get("keydown")[0]({ key: "Tab", preventDefault: () => assert.fail("Tab is not a pick") });
    assert.deepEqual(picked, ["a", "a"]);
    assert.ok(prevented);
  });
});
