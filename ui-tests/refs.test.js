// refs.js: a payload reference in shown JSON reads as its size with a download link, as text.

import assert from "node:assert/strict";
import { test } from "node:test";

import { byClass } from "./fakedom.js";
import { dataBlock, downloadHref, holdsRef, humanSize, refLabel, refOf } from "../workflow_manager/ui/refs.js";

const DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
const JOB = "3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93";
const REF = { $ref: `wm://main/${JOB}/${DIGEST}`, sha256: DIGEST, size: 100_000_000 };

test("a reference is an object with exactly $ref, sha256 and size", () => {
  assert.deepEqual(refOf(REF), { uri: REF.$ref, store: "main", key: `${JOB}/${DIGEST}`, sha256: DIGEST, size: 100_000_000 });
  assert.equal(refOf({ ...REF, extra: 1 }), null);
  assert.equal(refOf({ $ref: "#/definitions/x", sha256: DIGEST, size: 1 }), null);
  assert.equal(refOf([REF]), null);
  assert.equal(holdsRef({ a: [{ b: REF }] }), true);
  assert.equal(holdsRef({ a: [1, "wm://main/x"] }), false);
});

test("sizes read in decimal units", () => {
  assert.equal(humanSize(512), "512 B");
  assert.equal(humanSize(1500), "1.5 kB");
  assert.equal(humanSize(100_000_000), "100.0 MB");
  assert.equal(humanSize(-1), "unknown size");
  assert.equal(refLabel(refOf(REF)), "stored value · 100.0 MB · sha256 9f86d081…");
});

test("the download link names the store, key, digest and size; a malformed key gets none", () => {
  assert.equal(downloadHref(refOf(REF)), `/api/payloads/main/${JOB}/${DIGEST}?sha256=${DIGEST}&size=100000000`);
  assert.equal(downloadHref(refOf({ ...REF, $ref: "wm://main/../etc/passwd" })), null);
  assert.equal(downloadHref(refOf({ ...REF, $ref: "wm://Main/a" })), null);
});

test("a block of JSON shows each reference by size, the rest as JSON text", () => {
  const block = dataBlock({ pages: 412, report: REF, tag: "<b>x</b>" });
  const [shown] = byClass(block, "payload-ref");
  assert.equal(shown.getAttribute("data-ref"), REF.$ref);
  assert.match(shown.textContent, /^stored value · 100\.0 MB · sha256 9f86d081… · download$/);
  const [link] = shown.findAll((el) => el.tagName === "a");
  assert.equal(link.getAttribute("href"), downloadHref(refOf(REF)));
  assert.equal(block.textContent.includes(DIGEST.slice(8)), false); // no digest in full, no content
  assert.ok(block.textContent.startsWith('{\n  "pages": 412,\n  "report": stored value'));
  assert.ok(block.textContent.endsWith('download,\n  "tag": "<b>x</b>"\n}'));
  // Without a reference: exactly JSON.stringify's layout.
  assert.equal(dataBlock({ a: [1, { b: null }] }).textContent, JSON.stringify({ a: [1, { b: null }] }, null, 2));
});
