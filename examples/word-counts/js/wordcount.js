// Word counting for the segment-word-counts step, kept free of any AMQP code so it can be
// tested alone. It follows the Python worker's rule (examples/word-counts/wordcount.py):
// NFC-normalise, lowercase, read the typographic apostrophe (U+2019) as ', then a word is a
// run of letters of any alphabet with optional inner apostrophes: "Don’t" -> "don't",
// "'tis" -> "tis", "lamp-room" -> "lamp" + "room", "1887" -> nothing.
//
// Python's `[^\W\d_]` (word characters that are not decimal digits nor "_") is exactly the
// letters (L), letter numbers (Nl) and other numbers (No) -- so "x²" and "Ⅻ" are words in both
// -- checked code point by code point for the Unicode version of Python 3.11.

const LETTER = String.raw`[\p{L}\p{Nl}\p{No}]`;
const WORD = new RegExp(`${LETTER}+(?:'${LETTER}+)*`, 'gu');

/**
 * Count the words of `text`, in order of first appearance.
 * A Map is used while counting so that words such as "constructor" never meet Object.prototype.
 * @param {string} text
 * @returns {Record<string, number>}
 */
export function countWords(text) {
  const counts = new Map();
  const normal = text.normalize('NFC').toLowerCase().replaceAll('\u2019', "'");
  for (const [word] of normal.matchAll(WORD)) {
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return Object.fromEntries(counts);
}

/** An input that the step cannot process; its message goes back to the manager in `x-error`. */
export class InvalidInput extends Error {
  constructor(message) {
    super(message);
    this.name = 'InvalidInput';
  }
}

/**
 * The step itself: the step input (a JSON object, decoded by jsworker) in, the step output out.
 * Throws InvalidInput when `section` is not a string of text.
 * @param {Record<string, unknown>} input
 * @returns {{section: Record<string, number>}}
 */
export function segmentWordCounts(input) {
  if (typeof input.section !== 'string') {
    const got = Object.hasOwn(input, 'section') ? describe(input.section) : 'no "section" key';
    throw new InvalidInput(`"section" must be a string of text, got ${got}`);
  }
  return { section: countWords(input.section) };
}

function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return `a ${typeof value}`;
}
