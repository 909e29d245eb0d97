// Bulk actions on a list of jobs: a checkbox per row and one to select every row shown; while
// rows are selected, a bar with Cancel / Retry / Pause / Resume / Fork… and the count, and an
// "All matching" choice: every job the list's filter matches, not only the rows shown.
//
// Selected rows are acted on one by one through each job's own route (the bulk API filters,
// it takes no list of ids); all matching goes through POST /api/jobs/bulk, asked first as a
// dry run for the count, then followed at GET /api/bulk/{id} until it has finished. Either way
// a confirmation shows the count first, and a summary ends it with the first refusals.

import { del, get, post, seg } from "../api.js";
import { h, replace, visible } from "../dom.js";
import { confirmAction, formDialog } from "../dialog.js";
import { field, forkInput } from "./forkinput.js";

// Each action: its button, its words, and the single-job route for a selected row.
const ACTIONS = {
  cancel: { label: "Cancel", verb: "Cancel", doing: "Cancelling", did: "Cancelled", danger: true, one: (id) => del(`/api/job/${seg(id)}`) },
  retry: { label: "Retry", verb: "Retry", doing: "Retrying", did: "Retried", one: (id) => post(`/api/job/${seg(id)}/retry`) },
  pause: { label: "Pause", verb: "Pause", doing: "Pausing", did: "Paused", one: (id) => post(`/api/job/${seg(id)}/pause`) },
  resume: { label: "Resume", verb: "Resume", doing: "Resuming", did: "Resumed", one: (id) => post(`/api/job/${seg(id)}/resume`) },
  fork: { label: "Fork…", verb: "Fork", doing: "Forking", did: "Forked", one: (id, params) => post(`/api/job/${seg(id)}/fork`, params) },
};

const WHAT_IT_DOES = {
  cancel: "No more steps are dispatched for them or their child jobs; their on_cancel steps run.",
  retry: "Each runs again from where it failed: completed steps keep their outputs. A job that has not failed or been cancelled is left as it is.",
  pause: "No new step is sent for them until they resume; steps under way finish.",
  resume: "Paused jobs go on from where they stopped.",
};

const POLL_FIRST_MS = 300;
const POLL_MS = 1000;
const ERRORS_SHOWN = 10; // the summary's list of refusals: the first ones, then a count

/** `n` with the reader's digit grouping: 1,234. */
function number(n) {
  return Number(n).toLocaleString();
}

/** "1 job" / "1,234 jobs". */
function jobs(n) {
  return `${number(n)} ${n === 1 ? "job" : "jobs"}`;
}

/** The list's filter ({workflow, status, id}) in words: "workflow=ingest, status=running". */
export function filterWords(filter) {
  const parts = [];
  if (filter.workflow) parts.push(`workflow=${filter.workflow}`);
  if (filter.status) parts.push(`status=${filter.status}`);
  if (filter.id) parts.push(`id starts with ${filter.id}`);
  return parts.join(", ");
}

/** The list's filter as POST /api/jobs/bulk takes it. The list shows a paused job among the
 * running ones (it is one, paused), the bulk filter tells them apart: running asks for both. */
export function bulkFilter(filter) {
  const body = {};
  if (filter.workflow) body.workflow = filter.workflow;
  if (filter.status) body.status = filter.status === "running" ? ["running", "paused"] : filter.status;
  if (filter.id) body.id_prefix = filter.id;
  return body;
}

/** An error line under a control, and the function that shows or clears it. */
function fieldError(control, id) {
  const line = h("p", { id, class: "field-error", "data-error": control.id, role: "alert", hidden: true });
  const show = (message) => {
    line.hidden = !message;
    line.textContent = message ? visible(message) : "";
    if (message) control.setAttribute("aria-invalid", "true");
    else control.removeAttribute("aria-invalid");
  };
  control.addEventListener("input", () => show(""));
  return [line, show];
}

/**
 * Ask how to fork `question` (its title and intro name the jobs): the step (required) and an
 * optional input. On confirm `send(params)` runs; what it resolves ends the dialog with
 * {value}; a throw keeps it open with the message. Resolves null when kept as it is.
 */
async function forkDialog(question, send) {
  const from = h("input", {
    type: "text", id: "bulk-fork-from", name: "from", required: true, spellcheck: "false", autocomplete: "off",
    "data-field": "bulk-fork-from", "aria-describedby": "bulk-fork-from-hint bulk-fork-from-error",
  });
  const input = h("textarea", {
    id: "bulk-fork-input", name: "input", rows: 5, spellcheck: "false", "data-field": "bulk-fork-input",
    placeholder: "Empty: each job's recorded input for the step",
    "aria-describedby": "bulk-fork-input-hint bulk-fork-input-error",
  });
  const [fromError, showFromError] = fieldError(from, "bulk-fork-from-error");
  const [inputError, showInputError] = fieldError(input, "bulk-fork-input-error");
  const submit = async () => {
    const step = from.value.trim();
    if (!step) {
      showFromError("Name the step to run again from.");
      from.focus();
      return false;
    }
    let value;
    try {
      value = forkInput(input.value, "each job's");
    } catch (error) {
      showInputError(error.message);
      input.focus();
      return false;
    }
    const params = { from: step };
    if (value !== undefined) params.input = value;
    return send(params);
  };
  const answer = await formDialog({
    title: question.title,
    intro: question.intro,
    confirm: question.confirm,
    focus: from,
    attrs: { "data-dialog": "bulk-fork" },
    fields: [
      field("Run again from step", from,
        h("p", { id: "bulk-fork-from-hint", class: "hint" }, "Its name in the workflow: it and the steps downstream of it run again; the others keep their outputs."),
        fromError),
      field("Input (a JSON object, optional)", input,
        h("p", { id: "bulk-fork-input-hint", class: "hint" }, "For the step in every fork. Empty: each job's recorded input."),
        inputError),
    ],
    submit,
  });
  return answer ? answer.value : null;
}

/** The refusals (job id: reason), the first few, as a list. */
function errorList(errors, refused) {
  if (!errors.length) return null;
  const shown = errors.slice(0, ERRORS_SHOWN);
  const more = refused - shown.length;
  return [
    h("ul", { class: "bulk-errors", "data-bulk-errors": "" }, shown.map((e) => h("li", { "data-job": e.job },
      h("a", { href: `/ui/job/${seg(e.job)}` }, h("code", {}, e.job)), ": ", e.reason))),
    more > 0 ? h("p", { class: "muted" }, `and ${jobs(more)} more not changed.`) : null,
  ];
}

/**
 * The bulk actions of a job list. `filter()` gives the list's filter now ({workflow, status,
 * id}: any may be empty); `done()` re-reads the list once an action has ended. Returns:
 * - `bar`, the action bar (hidden while no row is selected), and `status`, where an action's
 *   progress and summary show; both go above the list;
 * - `head(jobs)` before each render of rows `jobs`: the header cell's "select all shown" box
 *   (a selection keeps only the rows still shown);
 * - `cell(job)`, a row's first cell: its checkbox;
 * - `clear()` when the list shows something else (a new filter, another page).
 */
export function bulkActions({ filter, done }) {
  const selected = new Set();
  let shown = [];
  let headBox = null;
  let rowBoxes = []; // the checkboxes of the rows shown
  let running = false;

  const count = h("span", { class: "bulk-count", "data-bulk-count": "", "aria-live": "polite" });
  const allMatching = h("input", { type: "checkbox", id: `bulk-all-${Math.random().toString(36).slice(2, 8)}`, "data-bulk": "all-matching" });
  const buttons = Object.entries(ACTIONS).map(([action, spec]) => h("button", {
    type: "button", class: spec.danger ? "danger" : null, "data-bulk-action": action,
    "aria-haspopup": "dialog", onclick: () => start(action),
  }, spec.label));
  const clearButton = h("button", { type: "button", "data-bulk": "clear", onclick: () => clear() }, "Clear");
  const bar = h("div", { class: "bulk-bar", "data-bulk-bar": "", role: "region", "aria-label": "Bulk actions", hidden: true },
    count,
    h("label", { class: "bulk-all", for: allMatching.id }, allMatching, " All matching",
      h("span", { class: "muted" }, " (every job the filter matches, not only those shown)")),
    h("span", { class: "bulk-buttons" }, buttons, clearButton));
  const status = h("div", { class: "bulk-status", "data-bulk-status": "", "aria-live": "polite", hidden: true });

  const update = () => {
    bar.hidden = selected.size === 0 && !allMatching.checked;
    if (allMatching.checked) {
      const words = filterWords(filter());
      count.textContent = visible(words ? `All jobs matching ${words}` : "All jobs (no filter)");
    } else {
      count.textContent = `${number(selected.size)} selected`;
    }
    for (const button of buttons) button.disabled = running;
    if (headBox) {
      const ticked = shown.filter((id) => selected.has(id)).length;
      headBox.checked = shown.length > 0 && ticked === shown.length;
      headBox.indeterminate = ticked > 0 && ticked < shown.length;
    }
  };

  const clear = () => {
    selected.clear();
    allMatching.checked = false;
    for (const box of rowBoxes) box.checked = false;
    update();
  };
  allMatching.addEventListener("change", update);

  const head = (jobsShown) => {
    shown = jobsShown.map((job) => job.uuid);
    const keep = new Set(shown);
    for (const id of [...selected]) if (!keep.has(id)) selected.delete(id);
    rowBoxes = [];
    headBox = h("input", { type: "checkbox", "data-bulk": "select-shown", "aria-label": "Select all shown jobs" });
    headBox.addEventListener("change", () => {
      for (const id of shown) {
        if (headBox.checked) selected.add(id);
        else selected.delete(id);
      }
      for (const box of rowBoxes) box.checked = headBox.checked;
      update();
    });
    queueMicrotask(update);
    return headBox;
  };

  const cell = (job) => {
    const box = h("input", {
      type: "checkbox", "data-bulk-row": job.uuid, "aria-label": `Select job ${job.uuid}`,
      checked: selected.has(job.uuid),
    });
    rowBoxes.push(box);
    box.addEventListener("change", () => {
      if (box.checked) selected.add(job.uuid);
      else selected.delete(job.uuid);
      update();
    });
    return h("td", { class: "select" }, box);
  };

  const say = (...children) => {
    status.hidden = false;
    replace(status, ...children);
  };
  const failed = (text) => say(h("p", { class: "notice error", role: "alert" }, text));

  /** The progress line: done of total, changed, refused. */
  const progress = (spec, view) => {
    status.dataset.state = view.status;
    for (const key of ["done", "total", "changed", "refused"]) status.dataset[key] = String(view[key]);
    const finished = view.status === "finished";
    const line = finished
      ? `${spec.did} ${number(view.changed)} of ${jobs(view.total)}${view.refused ? `; ${number(view.refused)} not changed:` : "."}`
      : `${spec.doing}… ${number(view.done)} of ${jobs(view.total)} done · ${number(view.changed)} changed · ${number(view.refused)} not changed`;
    say(
      h("p", { class: `notice ${finished ? (view.refused ? "error" : "ok") : "info"}`, role: "status", "data-bulk-line": "" }, line),
      finished ? null : h("progress", { max: Math.max(view.total, 1), value: view.done }),
      finished ? errorList(view.errors || [], view.refused) : null,
      finished ? h("button", { type: "button", class: "small", "data-bulk": "dismiss", onclick: () => {
        status.hidden = true;
        replace(status);
      } }, "Dismiss") : null,
    );
  };

  /** Each selected job through its own route, one at a time, counting as it goes. */
  const eachSelected = async (action, ids, params) => {
    const spec = ACTIONS[action];
    const view = { status: "running", total: ids.length, done: 0, changed: 0, refused: 0, errors: [] };
    progress(spec, view);
    for (const id of ids) {
      try {
        await spec.one(id, params);
        view.changed += 1;
      } catch (error) {
        view.refused += 1;
        view.errors.push({ job: id, reason: error.message });
      }
      view.done += 1;
      progress(spec, view);
    }
    view.status = "finished";
    progress(spec, view);
  };

  /** Follow bulk `id` until it has finished. */
  const follow = async (spec, id) => {
    let wait = POLL_FIRST_MS;
    for (;;) {
      let view;
      try {
        view = await get(`/api/bulk/${seg(id)}`);
      } catch (error) {
        failed(`Could not read how far it got: ${error.message}. It goes on in the manager (bulk ${id}).`);
        return;
      }
      progress(spec, view);
      if (view.status === "finished") return;
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = POLL_MS;
    }
  };

  const onSelected = async (action) => {
    const spec = ACTIONS[action];
    const ids = shown.filter((id) => selected.has(id));
    if (!ids.length) return;
    const what = `${spec.verb} ${ids.length === 1 ? "the selected job" : `the ${jobs(ids.length)} selected`}?`;
    if (action === "fork") {
      const params = await forkDialog({
        title: what,
        intro: `Each of the ${jobs(ids.length)} selected gets a new job that runs the step and every step after it again.`,
        confirm: `Fork ${jobs(ids.length)}`,
      }, async (p) => p);
      if (!params) return;
      await eachSelected(action, ids, params);
      return;
    }
    const ok = await confirmAction({ title: what, message: WHAT_IT_DOES[action], confirm: `${spec.verb} ${jobs(ids.length)}`, danger: spec.danger });
    if (!ok) return;
    await eachSelected(action, ids);
  };

  const onMatching = async (action) => {
    const spec = ACTIONS[action];
    const now = filter();
    const body = { action, filter: bulkFilter(now) };
    const words = filterWords(now);
    let matched;
    try {
      // A dry run of a fork needs a step too (it is asked for after the count): any name
      // does, a dry run only counts.
      const dry = await post("/api/jobs/bulk", { ...body, ...(action === "fork" ? { fork: { from: "-" } } : {}), dry_run: true });
      matched = dry.matched;
    } catch (error) {
      failed(`Could not count the jobs it would ${spec.verb.toLowerCase()}: ${error.message}`);
      return;
    }
    if (matched === 0) {
      failed(words ? `No job matches ${words}: nothing to ${spec.verb.toLowerCase()}.` : `There are no jobs to ${spec.verb.toLowerCase()}.`);
      return;
    }
    const question = words ? `${spec.verb} ${jobs(matched)} matching ${words}?` : `${spec.verb} all ${jobs(matched)}?`;
    let accepted;
    if (action === "fork") {
      accepted = await forkDialog({
        title: question,
        intro: "Each gets a new job that runs the step and every step after it again. The filter is evaluated again when you confirm.",
        confirm: `Fork ${jobs(matched)}`,
      }, async (params) => {
        try {
          return await post("/api/jobs/bulk", { ...body, fork: params });
        } catch (error) {
          throw new Error(`Could not fork them: ${error.message}`);
        }
      });
      if (!accepted) return;
    } else {
      const ok = await confirmAction({
        title: question,
        message: `${WHAT_IT_DOES[action]} The filter is evaluated again when you confirm; jobs that start matching later are not included.`,
        confirm: `${spec.verb} ${jobs(matched)}`,
        danger: spec.danger,
      });
      if (!ok) return;
      try {
        accepted = await post("/api/jobs/bulk", body);
      } catch (error) {
        failed(`Could not ${spec.verb.toLowerCase()} them: ${error.message}`);
        return;
      }
    }
    status.dataset.bulk = accepted.id;
    await follow(spec, accepted.id);
  };

  async function start(action) {
    if (running) return;
    running = true;
    delete status.dataset.state; // "finished" below: this action's, not an earlier one's
    update();
    try {
      const matching = allMatching.checked;
      if (matching) await onMatching(action);
      else await onSelected(action);
      if (status.dataset.state === "finished") {
        clear();
        await done();
      }
    } finally {
      running = false;
      update();
    }
  }

  return { bar, status, head, cell, clear };
}
