// A confirmation in a real <dialog> (modal): Escape or "Keep" declines.

import { h } from "./dom.js";

/** Ask before doing `action`; resolves true when the user confirms. */
export function confirmAction({ title, message, confirm, danger = false }) {
  return new Promise((resolve) => {
    const yes = h("button", { type: "button", class: danger ? "danger" : "primary", "data-confirm": "yes" }, confirm);
    const no = h("button", { type: "button", "data-confirm": "no" }, "Keep as it is");
    const dialog = h(
      "dialog",
      { class: "confirm", "aria-labelledby": "confirm-title" },
      h("h2", { id: "confirm-title" }, title),
      h("p", {}, message),
      h("div", { class: "actions" }, no, yes),
    );
    const finish = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    yes.addEventListener("click", () => finish(true));
    no.addEventListener("click", () => finish(false));
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      finish(false);
    });
    document.body.append(dialog);
    dialog.showModal();
    no.focus();
  });
}

let formDialogs = 0;

/**
 * A form in a modal <dialog>: `fields` (nodes: labelled controls) under the title and `intro`,
 * then "Keep as it is" and `confirm`. On confirm `submit()` runs: it resolves to `false` to
 * keep the dialog open (it showed why, next to a field), or to any other value, which closes
 * the dialog and resolves the promise with {value}; one that throws keeps it open and shows
 * its message in the dialog. Escape or "Keep as it is" close it: the promise resolves null.
 * `focus` (a control in `fields`) takes the focus first, else the first control.
 */
export function formDialog({ title, intro, fields, confirm, submit, danger = false, focus, attrs = {} }) {
  return new Promise((resolve) => {
    formDialogs += 1;
    const titleId = `form-dialog-title-${formDialogs}`;
    const yes = h("button", { type: "submit", class: danger ? "danger" : "primary", "data-confirm": "yes" }, confirm);
    const no = h("button", { type: "button", "data-confirm": "no" }, "Keep as it is");
    const said = h("div", { class: "dialog-error", "aria-live": "assertive" });
    const form = h("form", { novalidate: true }, fields, said, h("div", { class: "actions" }, no, yes));
    const dialog = h(
      "dialog",
      { class: "confirm form-dialog", "aria-labelledby": titleId, ...attrs },
      h("h2", { id: titleId }, title),
      intro ? h("p", { class: "muted" }, intro) : null,
      form,
    );
    let busy = false;
    const finish = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (busy) return; // a second Enter while the first submit is under way
      busy = true;
      yes.disabled = true;
      said.replaceChildren();
      try {
        const value = await submit();
        if (value !== false) {
          finish({ value });
          return;
        }
      } catch (error) {
        said.append(h("p", { class: "notice error", role: "alert" }, error.message));
      } finally {
        busy = false;
        yes.disabled = false;
      }
    });
    // While a submit is under way its answer decides: closing then would hide what it did.
    no.addEventListener("click", () => busy || finish(null));
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      if (!busy) finish(null);
    });
    document.body.append(dialog);
    dialog.showModal();
    (focus || form.querySelector("select, textarea, input") || no).focus();
  });
}
