// The job page: header, Cancel / Retry, the DAG, the timeline, payload and result or error.
// It follows /api/events?job=ID and re-reads the steps (at most every 500 ms) as the job runs.

import { ApiError, debounce, del, follow, get, post, seg } from "../api.js";
import { dag } from "../dag.js";
import { confirmAction } from "../dialog.js";
import { facts, h, jsonBlock, notice, replace, table } from "../dom.js";
import { UUID, duration, shortId, statusBadge, time } from "../format.js";
import { timeline } from "../timeline.js";
import { stepPanel } from "./steppanel.js";

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
      ["Finished", job.finished_at ? time(job.finished_at) : undefined],
      ["Duration", job.status === "running" ? h("span", { "data-ticking": job.elapsed, "data-read-at": Date.now() }, duration(job.elapsed)) : duration(job.elapsed)],
      ["Priority", job.priority ? h("span", { "data-field": "priority" }, String(job.priority)) : undefined],
      ["Unique key", job.unique_key ? h("code", { "data-field": "unique-key" }, job.unique_key) : undefined],
      ["Trace id", job.trace_id ? h("code", { "data-field": "trace-id" }, job.trace_id) : undefined],
      job.branch_running
        ? ["Now running", `its ${job.branch} steps`]
        : ["Then ran", job.branch ? `its ${job.branch} steps` : undefined],
      ["Definition", job.definition ? h("code", {}, job.definition) : undefined],
    ]),
  ];
}

/** A job's error: its message as a sentence (naming the step), then any other fields as JSON. */
function errorBlock(error) {
  if (!error || typeof error !== "object" || typeof error.message !== "string") return jsonBlock(error);
  const { message, step, ...rest } = error;
  return [
    h("p", { class: "error-text", "data-field": "message" }, step ? `Step ${step}: ${message}` : message),
    Object.keys(rest).length ? jsonBlock(rest) : null,
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

  const render = () => {
    const job = state.job;
    const actions = [];
    if (job.can_cancel) actions.push(h("button", { type: "button", class: "danger", "data-action": "cancel", onclick: () => act("cancel") }, "Cancel"));
    if (job.can_retry) actions.push(h("button", { type: "button", class: "primary", "data-action": "retry", onclick: () => act("retry") }, "Retry"));
    if (job.can_pause) actions.push(h("button", { type: "button", "data-action": "pause", onclick: () => pauseOrResume("pause") }, "Pause"));
    if (job.can_resume) actions.push(h("button", { type: "button", class: "primary", "data-action": "resume", onclick: () => pauseOrResume("resume") }, "Resume"));
    replace(head, header(job, actions));
    const select = (name) => {
      state.selected = name;
      render();
      panel.scrollIntoView({ block: "nearest" });
    };
    replace(graph, dag(job.steps, { mode: "run", selected: state.selected, onSelect: select }));
    replace(gantt, timeline(job));
    undone.hidden = !job.compensations;
    replace(undone, job.compensations ? compensationCard(job) : []);
    replace(
      data,
      h("section", { class: "card" }, h("h2", {}, "Payload"), jsonBlock(job.payload, "no payload")),
      job.meta ? h("section", { class: "card", id: "job-meta" }, h("h2", {}, "Metadata"), jsonBlock(job.meta, "none")) : null,
      job.error !== undefined && job.error !== null
        ? h("section", { class: "card error-card", id: "job-error" }, h("h2", {}, "Error"), errorBlock(job.error))
        : h("section", { class: "card", id: "job-result" }, h("h2", {}, "Result"),
          jsonBlock(job.result, job.status === "running" ? "not yet: the job is running" : "none")),
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
