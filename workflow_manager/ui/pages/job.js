// The job page: header, Cancel / Retry / Fork, the DAG, the timeline, payload and result or
// error; a fork's source and kept steps, a source's forks. It follows /api/events?job=ID and re-reads the steps (at most every 500 ms) as the job runs.

import { ApiError, debounce, del, follow, get, post, seg } from "../api.js";
import { dag } from "../dag.js";
import { confirmAction, formDialog } from "../dialog.js";
import { facts, h, notice, replace, s, table, visible } from "../dom.js";
import { dataBlock } from "../refs.js";
import { UUID, duration, shortId, statusBadge, statusLabel, time } from "../format.js";
import { timeline } from "../timeline.js";
import { stepPanel } from "./steppanel.js";
import { field, forkInput } from "./forkinput.js";

function header(job, actions) {
  const parent = job.parent
    ? h("span", {}, h("a", { href: `/ui/job/${seg(job.parent)}`, "data-link": "parent" }, shortId(job.parent)), job.parent_step ? ` (step ${job.parent_step})` : "")
    : undefined;
  const root = job.root && job.root !== job.uuid && job.root !== job.parent
    ? h("a", { href: `/ui/job/${seg(job.root)}` }, shortId(job.root))
    : undefined;
  return [
    h("div", { class: "title-row" },
      h("h1", {}, job.task ? "Child job " : "Job ", h("code", { class: "job-id" }, job.uuid)),
      statusBadge(job.status, { "data-job-status": job.status, id: "job-status" }),
      h("div", { class: "actions" }, actions)),
    facts([
      ["Workflow", h("a", { href: `/ui/workflow/${seg(job.workflow)}` }, job.workflow)],
      ["Task", job.task],
      ["Item", job.index !== undefined && job.index !== null ? `#${job.index}` : undefined],
      ["Parent", parent],
      ["Root", root],
      [job.start_at ? "Submitted" : "Started", time(job.submitted_at)],
      [job.status === "scheduled" ? "Starts" : "Start time", job.start_at ? h("span", { "data-field": "start-at" }, time(job.start_at)) : undefined],
      ["Queued since", job.queued_at ? h("span", { "data-field": "queued-at" }, time(job.queued_at)) : undefined],
      ["Waits for", job.waiting_for ? h("span", { "data-field": "waiting-for" }, waitingFor(job.waiting_for)) : undefined],
      ["Throttled until", job.waiting_for && job.waiting_for.until ? h("span", { "data-field": "throttled-until" }, time(job.waiting_for.until)) : undefined],
      ["Finished", job.finished_at ? time(job.finished_at) : undefined],
      ["Duration", job.status === "running" ? h("span", { "data-ticking": job.elapsed, "data-read-at": Date.now() }, duration(job.elapsed)) : duration(job.elapsed)],
      ["Priority", job.priority ? h("span", { "data-field": "priority" }, String(job.priority)) : undefined],
      ["Unique key", job.unique_key ? h("code", { "data-field": "unique-key" }, job.unique_key) : undefined],
      ["Debounce key", job.debounce_key ? h("code", { "data-field": "debounce-key" }, job.debounce_key) : undefined],
      ["Fair share", job.fair_share ? h("code", { "data-field": "fair-share" }, `${job.fair_share.key} ×${job.fair_share.weight}`) : undefined],
      ["Trace id", job.trace_id ? h("code", { "data-field": "trace-id" }, job.trace_id) : undefined],
      job.branch_running
        ? ["Now running", `its ${job.branch} steps`]
        : ["Then ran", job.branch ? `its ${job.branch} steps` : undefined],
      ["Definition", job.definition ? h("code", {}, job.definition) : undefined],
    ]),
    job.forked_from ? forkedFromLine(job.forked_from) : null,
    job.forks && job.forks.length ? forksLine(job.forks) : null,
  ];
}

/** The limit a queued job waits under, as text: "limit per-tenant (key "acme"): 10 of 10 running",
 * or for its workflow's rate "the workflow's rate (key "acme"): 5 of 5 started in its window". */
function waitingFor(w) {
  const names = { limit: `limit ${w.limit}`, concurrency: "the workflow's concurrency", rate: "the workflow's rate" };
  const name = names[w.kind] || "--max-running-jobs";
  const key = w.key !== undefined && w.key !== null ? ` (key ${w.key})` : "";
  const use = w.kind === "rate" ? "started in its window" : "running";
  return `${name}${key}: ${w.running} of ${w.of} ${use}`;
}

function count(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

/** A fork's line: its source (a link), the step it ran again from, what it kept. */
function forkedFromLine(from) {
  const parts = [`kept ${count(from.reused.length, "step", "steps")}`];
  if (from.children_reused) parts.push(`kept ${count(from.children_reused, "child", "children")}`);
  if (from.input !== undefined && from.input !== null) parts.push(`${from.step} given a new input`);
  return h("p", { class: "lineage", "data-field": "forked-from" },
    "Forked from ", h("a", { href: `/ui/job/${seg(from.job)}`, "data-link": "fork-source" }, shortId(from.job)),
    " at step ", h("code", {}, from.step), h("span", { class: "muted" }, ` · ${parts.join(" · ")}`));
}

/** A source's line: a link to each of its forks, with its step, the newest last. */
function forksLine(forks) {
  // ISO times of one format: their text sorts as the times do (a stable sort keeps ties).
  const sorted = [...forks].sort((a, b) => String(a.at).localeCompare(String(b.at)));
  return h("div", { class: "lineage", "data-field": "forks" },
    h("span", {}, `${sorted.length === 1 ? "Fork" : "Forks"}:`),
    h("ul", { class: "fork-list" }, sorted.map((fork) => h("li", { "data-fork": fork.id },
      h("a", { href: `/ui/job/${seg(fork.id)}` }, shortId(fork.id)),
      " at step ", h("code", {}, fork.step), h("span", { class: "muted" }, " · "), time(fork.at)))));
}

/** Mark the DAG's nodes of the steps a fork kept: a "kept" badge below each, and their labels. */
function markKept(graph, from) {
  const kept = new Set(from.reused);
  const why = `output kept from job ${from.job}`;
  for (const node of graph.querySelectorAll("g.node")) {
    if (!kept.has(node.dataset.step)) continue;
    const box = node.querySelector("rect.box");
    const width = Number(box.getAttribute("width"));
    const height = Number(box.getAttribute("height"));
    node.classList.add("kept");
    node.setAttribute("aria-label", `${node.getAttribute("aria-label")}, ${why}`);
    const title = node.querySelector(":scope > title");
    if (title) title.textContent = `${title.textContent}, ${why}`;
    // On the box's bottom edge, right: the one place no line of the node's text reaches.
    node.append(s("g", { class: "kept-badge", "data-kept": from.job, transform: `translate(${width - 50},${height - 8})` },
      s("title", {}, why),
      s("rect", { width: 42, height: 16, rx: 8 }),
      s("text", { x: 21, y: 12, "text-anchor": "middle" }, "kept")));
  }
}

// The kinds of step a fork can start from: the job's own, not its on_error / on_cancel steps
// nor fallbacks (those run when their step or the job needs them).
const FORKABLE_KINDS = ["step", "task"];

function isTask(step) {
  return step.kind === "task" || Boolean(step.children);
}

/** Ask how to fork `job`; resolves the new job's id, or null when the user kept it as it is. */
async function forkDialog(job) {
  const steps = job.steps.filter((step) => FORKABLE_KINDS.includes(step.kind || "step"));
  const first = steps.find((step) => step.status === "failed") || steps[0];
  const from = h("select", { id: "fork-from", name: "from", "data-field": "fork-from", "aria-describedby": "fork-from-hint" },
    steps.map((step) => h("option", { value: step.name, selected: step === first }, `${step.name} (${statusLabel(step.status)})`)));
  const input = h("textarea", {
    id: "fork-input", name: "input", rows: 5, spellcheck: "false", "data-field": "fork-input",
    "aria-describedby": "fork-input-hint fork-input-error",
  });
  const inputError = h("p", { id: "fork-input-error", class: "field-error", "data-error": "fork-input", role: "alert", hidden: true });
  const useRecorded = h("button", { type: "button", class: "small", "data-action": "fork-recorded-input" }, "Edit its recorded input");
  const definition = h("select", { id: "fork-definition", name: "definition", "data-field": "fork-definition", "aria-describedby": "fork-definition-hint" },
    h("option", { value: "current", selected: true }, "current"),
    h("option", { value: "pinned" }, "pinned"));
  const children = h("select", { id: "fork-children", name: "children", "data-field": "fork-children" },
    h("option", { value: "failed", selected: true }, "failed: keep the completed children, run the rest"),
    h("option", { value: "all" }, "all: run every child again"));
  const childrenField = field("Children of the task step", children);
  const chosen = () => steps.find((step) => step.name === from.value);

  const showError = (message) => {
    inputError.hidden = !message;
    inputError.textContent = message ? visible(message) : "";
    if (message) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  };
  const update = () => {
    const step = chosen();
    childrenField.hidden = !isTask(step);
    const recorded = step.input !== undefined && step.input !== null;
    useRecorded.hidden = !recorded;
    const text = recorded ? JSON.stringify(step.input) : "";
    input.placeholder = visible(recorded
      ? `Empty: its recorded input, ${text.length > 160 ? `${text.slice(0, 159)}…` : text}`
      : "Empty: the input made for it from the kept outputs");
  };
  from.addEventListener("change", update);
  input.addEventListener("input", () => showError(""));
  useRecorded.addEventListener("click", () => {
    input.value = JSON.stringify(chosen().input, null, 2);
    showError("");
    input.focus();
  });
  update();

  const submit = async () => {
    let value;
    try {
      value = forkInput(input.value, "the step's");
    } catch (error) {
      showError(error.message);
      input.focus();
      return false;
    }
    const body = { from: from.value };
    if (value !== undefined) body.input = value;
    body.definition = definition.value;
    if (isTask(chosen())) body.children = children.value;
    try {
      return (await post(`/api/job/${seg(job.uuid)}/fork`, body)).id;
    } catch (error) {
      throw new Error(`Could not fork the job: ${error.message}`);
    }
  };
  const answer = await formDialog({
    title: "Fork this job?",
    intro: "A new job keeps this one's outputs of the steps before the chosen step, and runs that step and every step after it again.",
    confirm: "Fork job",
    focus: from,
    attrs: { "data-dialog": "fork" },
    fields: [
      field("Run again from step", from,
        h("p", { id: "fork-from-hint", class: "hint" }, "It and the steps downstream of it run; the others keep their outputs.")),
      field("Input (a JSON object, optional)", input,
        h("p", { id: "fork-input-hint", class: "hint" }, "Empty: the step's recorded input."),
        useRecorded, inputError),
      field("Definition", definition,
        h("p", { id: "fork-definition-hint", class: "hint" },
          "current: the workflow as loaded now · pinned: the definition this job ran",
          job.definition ? [" (", h("code", {}, job.definition.slice(0, 12)), ")"] : null)),
      childrenField,
    ],
    submit,
  });
  return answer ? answer.value : null;
}

/** A job's error: its message as a sentence (naming the step), then any other fields as JSON. */
function errorBlock(error) {
  if (!error || typeof error !== "object" || typeof error.message !== "string") return dataBlock(error);
  const { message, step, ...rest } = error;
  return [
    h("p", { class: "error-text", "data-field": "message" }, step ? `Step ${step}: ${message}` : message),
    Object.keys(rest).length ? dataBlock(rest) : null,
  ];
}

/** The compensations of a failed or cancelled job, in the order they run, each with its status. */
function compensationRows(job) {
  return job.compensations.runs.map((run, i) => h(
    "tr", { "data-compensation": run.name, "data-status": run.status },
    h("td", {}, String(i + 1)),
    h("td", {}, run.step),
    h("td", {}, run.job === job.uuid ? "this job" : h("a", { href: `/ui/job/${seg(run.job)}` }, shortId(run.job))),
    h("td", {}, h("code", {}, run.name)),
    h("td", {}, statusBadge(run.status)),
    h("td", {}, String(run.attempts)),
    h("td", {}, run.error || ""),
  ));
}

function compensationCard(job) {
  const why = job.compensations.reason === "cancelled" ? "was cancelled" : "failed";
  return [
    h("div", { class: "section-head" }, h("h2", {}, "Compensations"),
      h("span", { class: "muted" }, `The job ${why}: its completed steps are undone, the last completed first.`)),
    h("div", { class: "table-scroll" }, table(
      ["#", "Step", "Job", "Compensation", "Status", "Attempts", "Error"], compensationRows(job), { class: "compensation-table" },
    )),
  ];
}

/** Render the job page for `id` into `main`, and keep it live. */
export function showJob(main, id) {
  document.title = `Job ${id.slice(0, 8)} · workflow-manager`;
  if (!UUID.test(id)) {
    replace(main, h("h1", {}, "Job"), notice(`'${id}' is not a job id (a UUID like 3f2a6c1e-0b7d-4c44-9a55-2f1f0c1d2e3f).`));
    return;
  }
  const head = h("section", { class: "job-head" });
  const messages = h("div", { class: "messages", "aria-live": "polite" });
  const graph = h("div", { class: "dag-box" });
  const panel = h("section", { class: "card step-panel", id: "step-panel", "aria-label": "Step details", hidden: true });
  const gantt = h("div", { class: "timeline-box" });
  const undone = h("section", { class: "card", id: "compensations", hidden: true });
  const data = h("div", { class: "data-grid" });
  replace(
    main,
    head, messages,
    h("section", { class: "card graph-card" },
      h("div", { class: "section-head" }, h("h2", {}, "Steps"), h("span", { class: "muted" }, "Click a step for its input, output and attempts.")),
      graph),
    panel,
    undone,
    h("section", { class: "card" }, h("h2", {}, "Timeline"), gantt),
    data,
  );

  const state = { job: null, selected: null };
  const details = stepPanel(panel, id, () => {
    state.selected = null;
    render();
  }, () => load());

  // Pause and resume change nothing that cannot be undone: no confirmation.
  const pauseOrResume = async (what) => {
    try {
      await post(`/api/job/${seg(id)}/${what}`);
      replace(messages, notice(what === "pause" ? "Job paused: no new step is sent until it resumes." : "Job resumed.", "ok"));
    } catch (error) {
      replace(messages, notice(`Could not ${what} the job: ${error.message}`));
    }
    await load();
  };

  const act = async (what) => {
    const cancel = what === "cancel";
    const ok = await confirmAction({
      title: cancel ? "Cancel this job?" : "Retry this job?",
      message: cancel
        ? "No more steps will be dispatched for it or its child jobs; its on_cancel steps run."
        : "It runs again from where it failed: completed steps keep their outputs.",
      confirm: cancel ? "Cancel job" : "Retry job",
      danger: cancel,
    });
    if (!ok) return;
    try {
      if (cancel) await del(`/api/job/${seg(id)}`);
      else await post(`/api/job/${seg(id)}/retry`);
      replace(messages, notice(cancel ? "Job cancelled." : "Job restarted.", "ok"));
    } catch (error) {
      replace(messages, notice(`Could not ${what} the job: ${error.message}`));
    }
    await load();
  };

  const fork = async () => {
    const forked = await forkDialog(state.job);
    if (forked) location.assign(`/ui/job/${seg(forked)}`);
  };

  const render = () => {
    const job = state.job;
    const actions = [];
    if (job.can_cancel) actions.push(h("button", { type: "button", class: "danger", "data-action": "cancel", onclick: () => act("cancel") }, "Cancel"));
    if (job.can_retry) actions.push(h("button", { type: "button", class: "primary", "data-action": "retry", onclick: () => act("retry") }, "Retry"));
    if (job.can_pause) actions.push(h("button", { type: "button", "data-action": "pause", onclick: () => pauseOrResume("pause") }, "Pause"));
    if (job.can_resume) actions.push(h("button", { type: "button", class: "primary", "data-action": "resume", onclick: () => pauseOrResume("resume") }, "Resume"));
    if (job.can_fork) actions.push(h("button", { type: "button", "data-action": "fork", "aria-haspopup": "dialog", onclick: fork }, "Fork"));
    replace(head, header(job, actions));
    const select = (name) => {
      state.selected = name;
      render();
      panel.scrollIntoView({ block: "nearest" });
    };
    replace(graph, dag(job.steps, { mode: "run", selected: state.selected, onSelect: select }));
    if (job.forked_from) markKept(graph, job.forked_from);
    replace(gantt, timeline(job));
    undone.hidden = !job.compensations;
    replace(undone, job.compensations ? compensationCard(job) : []);
    replace(
      data,
      h("section", { class: "card" }, h("h2", {}, "Payload"), dataBlock(job.payload, "no payload")),
      job.meta ? h("section", { class: "card", id: "job-meta" }, h("h2", {}, "Metadata"), dataBlock(job.meta, "none")) : null,
      job.error !== undefined && job.error !== null
        ? h("section", { class: "card error-card", id: "job-error" }, h("h2", {}, "Error"), errorBlock(job.error))
        : h("section", { class: "card", id: "job-result" }, h("h2", {}, "Result"),
          dataBlock(job.result, job.status === "running" ? "not yet: the job is running" : "none")),
    );
    const step = job.steps.find((one) => one.name === state.selected);
    details.show(job, step);
  };

  const load = async () => {
    try {
      state.job = await get(`/api/job/${seg(id)}/steps`);
      document.title = `Job ${id.slice(0, 8)} (${state.job.status}) · ${state.job.workflow}`;
      render();
    } catch (error) {
      if (!state.job) {
        const text = error instanceof ApiError && error.status === 404 ? `No job ${id}.` : `Could not load the job: ${error.message}`;
        replace(head, h("h1", {}, "Job ", h("code", {}, id)));
        replace(messages, notice(text));
      } else {
        replace(messages, notice(`Could not refresh the job: ${error.message}`));
      }
    }
  };

  // A running job's duration goes on between refreshes: the manager's figure plus the time
  // since it was read (the browser's clock may differ from the manager's).
  setInterval(() => {
    for (const span of head.querySelectorAll("[data-ticking]")) {
      const since = (Date.now() - Number(span.dataset.readAt)) / 1000;
      span.textContent = duration(Number(span.dataset.ticking) + since);
    }
  }, 1000);
  const refresh = debounce(load, 500);
  follow({ job: id }, refresh);
  load();
}
