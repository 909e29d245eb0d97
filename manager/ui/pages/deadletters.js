// Dead letters: what the manager could not deliver or read, why, and a way to replay them.

import { get, post } from "../api.js";
import { confirmAction } from "../dialog.js";
import { h, notice, replace, table } from "../dom.js";
import { age } from "../format.js";

function preview(letter) {
  let text;
  if (letter.body !== undefined) text = typeof letter.body === "string" ? letter.body : JSON.stringify(letter.body);
  else text = `(binary, base64) ${letter.body_base64 || ""}`;
  return text.length > 160 ? `${text.slice(0, 159)}…` : text;
}

/** Render the dead letters into `main`. */
export function showDeadLetters(main) {
  document.title = "Dead letters · workflow-manager";
  const messages = h("div", { class: "messages", "aria-live": "polite" });
  const box = h("div", { class: "table-scroll" }, h("p", { class: "muted" }, "Loading…"));
  const replayAll = h("button", { type: "button", class: "primary", "data-action": "replay-all", disabled: true }, "Replay all");
  const reload = h("button", { type: "button", "data-action": "reload" }, "Refresh");
  replace(
    main,
    h("div", { class: "title-row" }, h("h1", {}, "Dead letters"), h("div", { class: "actions" }, reload, replayAll)),
    messages,
    h("section", { class: "card" }, box),
  );

  const replay = async (body, what) => {
    const ok = await confirmAction({
      title: `Replay ${what}?`,
      message: "The messages go back to the queues they came from, and leave the dead-letter queue.",
      confirm: "Replay",
    });
    if (!ok) return;
    try {
      const answer = await post("/api/dead-letters/replay", body);
      replace(messages, notice(`Replayed ${answer.replayed} message${answer.replayed === 1 ? "" : "s"}.`, "ok"));
    } catch (error) {
      replace(messages, notice(`Could not replay: ${error.message}`));
    }
    await load();
  };

  const load = async () => {
    let answer;
    try {
      answer = await get("/api/dead-letters", { limit: 100 });
    } catch (error) {
      replace(messages, notice(`Could not load the dead letters: ${error.message}`));
      return;
    }
    const shown = answer.letters.length;
    replayAll.disabled = shown === 0;
    replayAll.onclick = () => replay({ all: true }, answer.more ? "every dead letter" : `all ${shown} dead letter${shown === 1 ? "" : "s"}`);
    const rows = answer.letters.map((letter) => h("tr", { "data-correlation-id": letter.correlation_id || "" },
      h("td", {}, letter.reason || "–"),
      h("td", {}, h("code", {}, letter.source_queue || "–")),
      h("td", {}, letter.correlation_id ? h("code", {}, letter.correlation_id) : "–"),
      h("td", {}, age(letter.dead_at)),
      h("td", { class: "preview" }, h("code", {}, preview(letter))),
      h("td", {}, h("button", {
        type: "button", "data-action": "replay", disabled: !letter.correlation_id,
        onclick: () => replay({ correlation_id: letter.correlation_id }, "this message"),
      }, "Replay"))));
    replace(box, rows.length
      ? [h("p", { class: "muted" }, answer.more ? `The oldest ${shown} of the dead-letter queue; it holds more.` : `${shown} in the dead-letter queue, oldest first.`),
        table(["Reason", "From queue", "Correlation id", "Age", "Body", ""], rows, { class: "letters" })]
      : h("p", { class: "muted" }, "The dead-letter queue is empty."));
  };
  reload.addEventListener("click", () => load());
  load();
}
