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
