const test = require('node:test');
const assert = require('node:assert/strict');
const { countWords, segmentWordCounts, InvalidInput } = require('../wordcount');

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
  const body = Buffer.from(JSON.stringify({ section: 'a b a', other: 1 }));
  assert.deepEqual(segmentWordCounts(body), { section: { a: 2, b: 1 } });
});

test('segmentWordCounts refuses bodies that are not an object with a string section', () => {
  assert.throws(() => segmentWordCounts(Buffer.from('[1, 2]')), InvalidInput);
  assert.throws(() => segmentWordCounts(Buffer.from('{"section": 3}')), InvalidInput);
  assert.throws(() => segmentWordCounts(Buffer.from('{}')), InvalidInput);
  assert.throws(() => segmentWordCounts(Buffer.from('not json')), SyntaxError);
  assert.throws(() => segmentWordCounts(Buffer.from([0x7b, 0xff, 0x7d])), TypeError);
});
