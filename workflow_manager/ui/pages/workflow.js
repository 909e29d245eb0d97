// A workflow's page: its definition as a graph, each step's policies, its tasks, content hash,
// YAML, and its recent jobs with bulk actions (./bulk.js).

import { debounce, follow, get, seg } from "../api.js";
import { dag } from "../dag.js";
import { facts, h, notice, replace, table } from "../dom.js";
import { duration, shortId, startsAt, statusBadge, stepTarget, time } from "../format.js";
import { bulkActions } from "./bulk.js";
import { fillSchedules } from "./schedules.js";

function backoff(b) {
  return b ? `${duration(b.initial)} × ${b.multiplier}, at most ${duration(b.max)}` : "–";
}

function policyRows(steps) {
  return steps.map((step) => h("tr", { "data-step": step.name },
    h("th", { scope: "row" }, step.name),
    h("td", {}, step.kind),
    h("td", {}, stepTarget(step)),
    h("td", {}, (step.depends || []).join(", ") || "–"),
    h("td", { class: "num" }, String(step.retries ?? 0)),
    h("td", { class: "num" }, step.timeout ? duration(step.timeout) : "–"),
    h("td", {}, backoff(step.retry_backoff))));
}

function policies(steps) {
  return table(["Step", "Kind", "Runs on", "Depends on", "Retries", "Timeout", "Backoff"], policyRows(steps), { class: "policies" });
}

function taskSection(step) {
  const task = step.task;
  return h("section", { class: "card", "data-task": task.name },
    h("h2", {}, `Task ${task.name}`, h("span", { class: "muted" }, ` — one child job per element, for step ${step.name}`)),
    facts([
      ["Item list key", h("code", {}, task.item_list_key)],
      ["Item key", h("code", {}, task.item_key)],
      ["Failed items allowed", String(task.max_failed_items)],
      ["Children at once", String(task.max_in_flight)],
    ]),
    dag(task.steps, { mode: "definition" }),
    policies(task.steps));
}

function jobTable(recent, bulk) {
  const selectShown = bulk.head(recent.jobs); // before the rows: it keeps their selection
  const rows = recent.jobs.map((job) => h("tr", { "data-job": job.uuid },
    bulk.cell(job),
    h("td", {}, h("a", { href: `/ui/job/${seg(job.uuid)}` }, shortId(job.uuid))),
    h("td", {}, statusBadge(job.status)),
    h("td", {}, time(job.submitted_at), startsAt(job)),
    h("td", { class: "num" }, duration(job.elapsed))));
  return rows.length
    ? h("div", { class: "table-scroll" }, table([selectShown, "Job", "Status", "Started", "Duration"], rows, { class: "jobs" }))
    : h("p", { class: "muted" }, "No jobs yet.");
}

/** Render the page of workflow `name` into `main`; its recent jobs stay live. */
export async function showWorkflow(main, name) {
  document.title = `${name} · workflow-manager`;
  const title = () => h("h1", {}, "Workflow ", h("span", { class: "name" }, name));
  replace(main, title(), h("p", { class: "muted" }, "Loading…"));
  const recentJobs = () => get("/api/jobs/recent", { workflow: name, limit: 20 });
  let definition;
  let recent;
  try {
    [definition, recent] = await Promise.all([get(`/api/workflow/${seg(name)}/definition`), recentJobs()]);
  } catch (error) {
    replace(main, title(), notice(`Could not load it: ${error.message}`));
    return;
  }
  const jobsBox = h("div", {});
  const refreshJobs = async () => {
    try {
      replace(jobsBox, jobTable(await recentJobs(), bulk));
    } catch (error) {
      replace(jobsBox, notice(`Could not refresh the jobs: ${error.message}`));
    }
  };
  const bulk = bulkActions({ filter: () => ({ workflow: name }), done: refreshJobs });
  replace(jobsBox, jobTable(recent, bulk));
  const schedulesBox = h("div", { id: "schedules" }, h("p", { class: "muted" }, "Loading…"));
  replace(
    main,
    title(),
    facts([
      ["Content hash", h("code", { "data-hash": definition.hash }, definition.hash)],
      ["Job timeout", definition.timeout ? duration(definition.timeout) : "none"],
      ["Steps", String(definition.steps.length)],
    ]),
    h("section", { class: "card" }, h("h2", {}, "Graph"), dag(definition.steps, { mode: "definition" })),
    h("section", { class: "card" }, h("h2", {}, "Policies"), h("div", { class: "table-scroll" }, policies(definition.steps))),
    definition.steps.filter((step) => step.task).map(taskSection),
    h("section", { class: "card" }, h("h2", {}, "Schedules"), schedulesBox),
    h("section", { class: "card", "data-section": "recent-jobs" }, h("h2", {}, "Recent jobs"), bulk.bar, bulk.status, jobsBox),
    h("section", { class: "card" }, h("h2", {}, "YAML"), h("pre", { class: "yaml" }, definition.yaml)),
  );
  fillSchedules(schedulesBox, name);
  const refresh = debounce(refreshJobs, 500);
  follow({ workflow: name }, (event) => {
    if (event.type === "reset" || event.type.startsWith("job.")) refresh();
  });
}
