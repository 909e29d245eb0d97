// What a fork form reads, shared by the job page's Fork dialog and the job lists' bulk fork:
// the input a fork gives its step, and a labelled field.
import { h } from "../dom.js";

function kindOf(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

/** The input a fork gives its step from a textarea's text: undefined when empty (the recorded
 * input: `whose` says whose, e.g. "the step's"), else a JSON object; anything else throws a
 * sentence saying what is wrong. */
export function forkInput(text, whose) {
  if (!text.trim()) return undefined;
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`The input is not valid JSON: ${error.message}. Leave it empty to use ${whose} recorded input.`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Error(`The input must be a JSON object such as {"key": "value"}, not ${kindOf(value)}.`);
  }
  return value;
}

/** A labelled control with what goes under it (a hint, an error line). */
export function field(label, control, ...below) {
  return h("div", { class: "field", "data-field-box": control.id }, h("label", { for: control.id }, label), control, below);
}
