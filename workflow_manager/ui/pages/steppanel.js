// The details of the step picked in the graph: input, output, error, each attempt, and for a
// task step a page of its child jobs (filtered by status, 50 a page) linking to each child.

import { get, post, seg } from "../api.js";
import { confirmAction } from "../dialog.js";
import { facts, h, notice, replace, table } from "../dom.js";
import { dataBlock } from "../refs.js";
import { CHILD_STATUSES, clock, duration, errorText, httpCall, shortId, statusBadge, statusLabel, time } from "../format.js";

const PAGE = 50;

function attempts(step, kept) {
  const history = step.history || [];
  if (!history.length && kept) return h("p", { class: "muted" }, "Not run in this job: its output was kept from the job it was forked from.");
  if (!history.length) return h("p", { class: "muted" }, "Not dispatched yet.");
  return h("div", { class: "table-scroll" }, table(
    ["#", "Started", "Ended", "Took", "Outcome", "Error"],
    history.map((a) => h("tr", { "data-attempt": a.attempt },
      h("td", {}, String(a.attempt)),
      h("td", {}, clock(a.dispatched_at)),
      h("td", {}, clock(a.finished_at)),
      h("td", { class: "num" }, duration(a.elapsed)),
      h("td", {}, h("span", { class: `outcome outcome-${a.outcome}` }, statusLabel(a.outcome))),
      h("td", { class: "error-text" }, errorText(a.error)))),
    { class: "attempts" },
  ));
}

/** A join step's progress: "needs 3 of 4 · 2 succeeded · 1 failed · 1 left", and once it
 * ended whether the join was met and what became of the children left. */
function joinLine(join) {
  const parts = [`${join.policy}: needs ${join.needed}`, `${join.succeeded} succeeded`, `${join.failed} failed`, `${join.left} left`];
  if (join.met === true) parts.push(join.then === "finish" ? "met: the rest left to finish" : "met: the rest cancelled");
  else if (join.met === false) parts.push("cannot be met");
  return h("span", { "data-field": "join", "data-needed": join.needed, "data-succeeded": join.succeeded }, parts.join(" · "));
}

/** A reduce step's progress: "reducer total · 3 batches of 100 · 250 children reduced". */
function reduceLine(reduce) {
  const parts = [`reducer ${reduce.step}`, `batches of ${reduce.batch}`];
  if (reduce.batches !== undefined) parts.push(`${reduce.batches} ${reduce.batches === 1 ? "batch" : "batches"} reduced`);
  if (reduce.reduced !== undefined) parts.push(`${reduce.reduced} children reduced`);
  if (reduce.in_flight) parts.push(`${reduce.in_flight} reducing now`);
  if (reduce.pending) parts.push(`${reduce.pending} waiting`);
  return h("span", { "data-field": "reduce", "data-batches": reduce.batches ?? "" }, parts.join(" · "));
}

function counts(children) {
  const parts = [`${children.total} children`];
  for (const status of CHILD_STATUSES) if (children[status]) parts.push(`${children[status]} ${statusLabel(status)}`);
  return h("p", { class: "child-counts", "data-total": children.total }, parts.join(" · "));
}

/** The Signal form of a waiting step (wait: true): a JSON object, sent after a confirmation. */
function signalForm(jobId, step, onSignalled) {
  const input = h("textarea", { rows: 4, spellcheck: "false", "aria-label": "Signal (a JSON object)", "data-field": "signal-body" });
  input.value = "{}";
  const said = h("div", { class: "signal-notice" });
  const send = async (event) => {
    event.preventDefault();
    let body;
    try {
      body = JSON.parse(input.value);
    } catch (error) {
      replace(said, notice(`Not valid JSON: ${error.message}`));
      return;
    }
    if (body === null || typeof body !== "object" || Array.isArray(body)) {
      replace(said, notice("The signal must be a JSON object, e.g. {\"approved\": true}"));
      return;
    }
    const ok = await confirmAction({
      title: `Signal step ${step.name}?`,
      message: step.status === "waiting"
        ? "The step completes with this JSON object as its output, and the job goes on."
        : "The step has not been reached yet: the signal is kept, and completes it when it is.",
      confirm: "Send signal",
    });
    if (!ok) return;
    try {
      const answer = await post(`/api/job/${seg(jobId)}/signal/${seg(step.name)}`, body);
      replace(said, notice(answer.status === "kept" ? "Signal kept until the step is reached." : "Signal sent: the step completed.", "ok"));
    } catch (error) {
      replace(said, notice(`Could not signal the step: ${error.message}`));
    }
    onSignalled();
  };
  return h("form", { class: "signal-form", "data-form": "signal", onsubmit: send },
    h("h3", {}, "Signal"),
    h("p", { class: "muted" }, "This step waits for a signal: a JSON object, which becomes its output."),
    input,
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", "data-action": "signal" }, "Send signal…")),
    said);
}

/** The panel in `box` for job `jobId`; `show(job, step)` renders a step, the × calls `onClose`,
 * a signal sent from it calls `onSignalled`. */
export function stepPanel(box, jobId, onClose, onSignalled = () => {}) {
  const paging = { step: null, status: "", offset: 0 };
  const childBox = h("div", { class: "children" });

  const loadChildren = async () => {
    const step = paging.step;
    try {
      const page = await get(`/api/job/${seg(jobId)}/children`, { step, status: paging.status, offset: paging.offset, limit: PAGE });
      if (paging.step !== step) return; // another step was picked meanwhile
      renderChildren(page);
    } catch (error) {
      replace(childBox, notice(`Could not load the children: ${error.message}`));
    }
  };

  const go = (offset) => {
    paging.offset = Math.max(0, offset);
    loadChildren();
  };

  const renderChildren = (page) => {
    const filter = h("select", { "aria-label": "Child status", "data-filter": "child-status" },
      h("option", { value: "" }, `all (${Object.values(page.counts).reduce((a, b) => a + b, 0)})`),
      CHILD_STATUSES.map((status) => h("option", { value: status, selected: paging.status === status }, `${statusLabel(status)} (${page.counts[status] ?? 0})`)));
    filter.addEventListener("change", () => {
      paging.status = filter.value;
      go(0);
    });
    const first = page.total ? page.offset + 1 : 0;
    const last = page.offset + page.children.length;
    const rows = page.children.map((child) => h("tr", { "data-child": child.uuid },
      h("td", {}, String(child.index)),
      h("td", {}, h("a", { href: `/ui/job/${seg(child.uuid)}` }, shortId(child.uuid))),
      h("td", {}, statusBadge(child.status)),
      h("td", { class: "num" }, duration(child.elapsed)),
      h("td", { class: "error-text" }, errorText(child.error))));
    replace(
      childBox,
      h("div", { class: "pager" },
        filter,
        h("span", { class: "range", "data-range": `${first}-${last}` }, `${first}–${last} of ${page.total}`),
        h("button", { type: "button", "data-page": "prev", disabled: page.offset === 0, onclick: () => go(page.offset - PAGE) }, "‹ Previous"),
        h("button", { type: "button", "data-page": "next", disabled: last >= page.total, onclick: () => go(page.offset + PAGE) }, "Next ›")),
      rows.length
        ? h("div", { class: "table-scroll" }, table(["#", "Child", "Status", "Took", "Error"], rows, { class: "child-table" }))
        : h("p", { class: "muted" }, "No child jobs match."),
    );
  };

  const show = (job, step) => {
    if (!step) {
      box.hidden = true;
      return;
    }
    if (paging.step !== step.name) Object.assign(paging, { step: step.name, status: "", offset: 0 });
    const task = step.kind === "task";
    const from = job.forked_from;
    // A fork's step that kept the source's output: said in the head and linked in the facts.
    const kept = from && (from.reused || []).includes(step.name) ? from.job : null;
    const forkedHere = from && from.step === step.name;
    const error = step.error !== undefined && step.error !== null
      ? [h("h3", {}, "Error"), h("pre", { class: "json error-text", "data-field": "error" }, errorText(step.error))]
      : null;
    const data = [h("h3", {}, "Input"), dataBlock(step.input, kept ? "not in this job: the source job's page has it" : "not known yet"), h("h3", {}, "Output"), dataBlock(step.output, "none yet")];
    replace(
      box,
      h("div", { class: "panel-head" },
        h("h2", {}, step.name),
        statusBadge(step.status, { "data-step-status": step.status }),
        kept ? h("span", { class: "kept-badge", "data-kept": kept, title: `output kept from job ${kept}` }, "kept") : null,
        h("button", { type: "button", class: "close", "aria-label": "Close the step details", onclick: () => onClose() }, "×")),
      h("div", { class: "panel-body" },
        h("div", {},
          facts([
            ["Kind", step.kind],
            ["Kept from", kept ? h("a", { href: `/ui/job/${seg(kept)}`, "data-link": "kept-from" }, shortId(kept)) : undefined],
            ["Forked at", forkedHere ? (from.input !== undefined && from.input !== null ? "this step, with a new input" : "this step") : undefined],
            ["Queue", step.queue && !step.http ? h("code", {}, step.queue) : undefined],
            ["Waits for", step.wait ? "a signal (wait: true)" : undefined],
            ["Waiting since", step.waiting_since ? time(step.waiting_since) : undefined],
            ["Throttled until", step.throttled_until ? h("span", { "data-field": "throttled-until" }, time(step.throttled_until)) : undefined],
            ["HTTP", step.http ? h("code", {}, httpCall(step.http)) : undefined],
            ["Depends on", step.depends && step.depends.length ? step.depends.join(", ") : undefined],
            ["Runs when", step.when ? h("code", {}, step.when) : undefined],
            ["Fallback", step.fallback || undefined],
            ["Fallback of", step.recovers || undefined],
            ["Input schema", step.input_schema || undefined],
            ["Output schema", step.output_schema || undefined],
            ["Attempts", task || (kept && !step.attempts) ? undefined : String(step.attempts ?? 0)],
            ["Started", step.started_at ? time(step.started_at) : undefined],
            ["Finished", step.finished_at ? time(step.finished_at) : undefined],
            ["Duration", step.elapsed !== undefined ? duration(step.elapsed) : undefined],
            ["Join", step.join ? joinLine(step.join) : undefined],
            ["Reduce", step.reduce ? reduceLine(step.reduce) : undefined],
          ]),
          error,
          step.wait && ["waiting", "pending"].includes(step.status) && ["running", "scheduled"].includes(job.status)
            ? signalForm(jobId, step, onSignalled)
            : null,
          task || step.wait ? null : [h("h3", {}, "Attempts"), attempts(step, kept)],
          task ? data : null),
        h("div", {},
          step.children ? [h("h3", {}, "Child jobs"), counts(step.children), childBox] : data)),
    );
    box.hidden = false;
    if (step.children) loadChildren();
  };

  return { show };
}
