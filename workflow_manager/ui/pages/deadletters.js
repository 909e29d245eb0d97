// Dead letters: what the manager could not deliver or read, why, and a way to replay them.
// The listing comes a page at a time, each body cut to its start (the API says when); a row's
// Replay sends exactly that letter (by its own id), whole.

import { get, post } from "../api.js";
import { confirmAction } from "../dialog.js";
import { h, notice, replace, table } from "../dom.js";
import { age } from "../format.js";

const PAGE = 100;

function preview(letter) {
  let text;
  if (letter.body !== undefined && letter.body !== null) text = typeof letter.body === "string" ? letter.body : JSON.stringify(letter.body);
  else text = `(binary, base64) ${letter.body_base64 || ""}`;
  return text.length > 160 || letter.body_truncated ? `${text.slice(0, 159)}…` : text;
}

function size(letter) {
  const bytes = letter.body_bytes || 0;
  if (bytes < 1024) return `${bytes} B`;
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** Render the dead letters into `main`. */
export function showDeadLetters(main) {
  document.title = "Dead letters · workflow-manager";
  const messages = h("div", { class: "messages", "aria-live": "polite" });
  const box = h("div", { class: "table-scroll" }, h("p", { class: "muted" }, "Loading…"));
  const replayAll = h("button", { type: "button", class: "primary", "data-action": "replay-all", disabled: true }, "Replay all");
  const reload = h("button", { type: "button", "data-action": "reload" }, "Refresh");
  const newer = h("button", { type: "button", "data-action": "previous-page", disabled: true }, "Previous page");
  const older = h("button", { type: "button", "data-action": "next-page", disabled: true }, "Next page");
  let offset = 0;
  replace(
    main,
    h("div", { class: "title-row" }, h("h1", {}, "Dead letters"), h("div", { class: "actions" }, reload, replayAll)),
    messages,
    h("section", { class: "card" }, box, h("div", { class: "actions" }, newer, older)),
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
      answer = await get("/api/dead-letters", { limit: PAGE, offset });
    } catch (error) {
      replace(messages, notice(`Could not load the dead letters: ${error.message}`));
      return;
    }
    const shown = answer.letters.length;
    const total = answer.total ?? shown;
    if (shown === 0 && offset > 0) {  // the page emptied (replayed): show the last one there is
      offset = Math.max(0, Math.floor((total - 1) / PAGE) * PAGE);
      if (total > 0) return load();
    }
    replayAll.disabled = total === 0;
    replayAll.onclick = () => replay({ all: true }, `all ${total} dead letter${total === 1 ? "" : "s"}`);
    newer.disabled = offset === 0;
    older.disabled = answer.next_offset === null || answer.next_offset === undefined;
    newer.onclick = () => { offset = Math.max(0, offset - PAGE); load(); };
    older.onclick = () => { offset = answer.next_offset; load(); };
    const rows = answer.letters.map((letter) => h("tr", { "data-letter-id": letter.id, "data-correlation-id": letter.correlation_id || "" },
      h("td", {}, letter.reason || "–"),
      h("td", {}, h("code", {}, letter.source_queue || "–")),
      h("td", {}, letter.correlation_id ? h("code", {}, letter.correlation_id) : "–"),
      h("td", {}, age(letter.dead_at)),
      h("td", { class: "preview" }, h("code", {}, preview(letter)),
        letter.body_truncated ? h("span", { class: "muted", "data-truncated": "" }, ` (first ${answer.preview_bytes} bytes of ${size(letter)}; a replay sends all)`) : null),
      h("td", {}, h("button", {
        type: "button", "data-action": "replay", disabled: !letter.id,
        onclick: () => replay({ id: letter.id }, "this message"),
      }, "Replay"))));
    const range = `${offset + 1}–${offset + shown} of ${total}`;
    replace(box, rows.length
      ? [h("p", { class: "muted" }, total > shown ? `Dead letters ${range}, oldest first.` : `${shown} in the dead-letter queue, oldest first.`),
        table(["Reason", "From queue", "Correlation id", "Age", "Body", ""], rows, { class: "letters" })]
      : h("p", { class: "muted" }, "The dead-letter queue is empty."));
  };
  reload.addEventListener("click", () => load());
  load();
}
