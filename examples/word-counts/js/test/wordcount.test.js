import assert from 'node:assert/strict';
import test from 'node:test';
import { InvalidInput, countWords, segmentWordCounts } from '../wordcount.js';

// The same cases as the Python rule in examples/word-counts/wordcount.py gives them
// (tests/integration/examples/test_js_worker.py compares the two on a longer text).
test('lowercases and counts runs of letters with inner apostrophes', () => {
  assert.deepEqual(countWords("Don't stop; DON’T -- 'tis o'clock'' rock'n'roll lamp-room 1887 42x"), {
    "don't": 2,
    stop: 1,
    tis: 1,
    "o'clock": 1,
    "rock'n'roll": 1,
    lamp: 1,
    room: 1,
    x: 1,
  });
});

test('letters of any alphabet, NFC-normalised; digits and underscores separate words', () => {
  assert.deepEqual(countWords('Café cafe\u0301 ΟΔΟΣ Straße 東京 x² Ⅻ ٣abc under_score'), {
    café: 2,
    οδος: 1,
    straße: 1,
    東京: 1,
    'x²': 1,
    ⅻ: 1,
    abc: 1,
    under: 1,
    score: 1,
  });
});

test('words that are Object.prototype names are counted like any other', () => {
  assert.deepEqual(countWords('constructor toString constructor'), { constructor: 2, tostring: 1 });
});

test('empty text gives no words', () => {
  assert.deepEqual(countWords(''), {});
});

test('segmentWordCounts replies with the counts under "section"', () => {
  assert.deepEqual(segmentWordCounts({ section: 'a b a', other: 1 }), { section: { a: 2, b: 1 } });
});

// Bodies that are not JSON objects never get here: jsworker answers them with InvalidRequest.
test('segmentWordCounts refuses inputs without a string section', () => {
  assert.throws(() => segmentWordCounts({ section: 3 }), { name: 'InvalidInput', message: /got a number/ });
  assert.throws(() => segmentWordCounts({ section: ['a'] }), { name: 'InvalidInput', message: /got a list/ });
  assert.throws(() => segmentWordCounts({}), InvalidInput);
});
