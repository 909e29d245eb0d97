// The overview: each workflow's counts over the last 24 h, and the latest jobs with filters
// and bulk actions (./bulk.js). It follows /api/events and re-reads both tables (at most every
// 500 ms), never the page.

import { debounce, follow, get, seg } from "../api.js";
import { h, notice, replace, table } from "../dom.js";
import { JOB_STATUSES, UUID, duration, shortId, startsAt, statusBadge, statusLabel, time } from "../format.js";
import { bulkActions } from "./bulk.js";

const WORKFLOW_COLUMNS = ["Workflow", "Running", "Completed (24 h)", "Failed (24 h)", "Cancelled (24 h)", "Median duration"];

function workflowRows(workflows) {
  return workflows.map((wf) => h("tr", { "data-workflow": wf.name },
    h("th", { scope: "row" }, h("a", { href: `/ui/workflow/${seg(wf.name)}` }, wf.name)),
    h("td", { class: "num", "data-count": "running" }, String(wf.running)),
    h("td", { class: "num", "data-count": "completed" }, String(wf.completed)),
    h("td", { class: "num", "data-count": "failed" }, String(wf.failed)),
    h("td", { class: "num", "data-count": "cancelled" }, String(wf.cancelled)),
    h("td", { class: "num" }, wf.median_seconds === null || wf.median_seconds === undefined ? "–" : duration(wf.median_seconds))));
}

function jobRows(jobs, bulk) {
  return jobs.map((job) => h("tr", { "data-job": job.uuid },
    bulk.cell(job),
    h("td", {}, h("a", { href: `/ui/job/${seg(job.uuid)}` }, shortId(job.uuid))),
    h("td", {}, h("a", { href: `/ui/workflow/${seg(job.workflow)}` }, job.workflow)),
    h("td", {}, statusBadge(job.status)),
    h("td", {}, time(job.submitted_at), startsAt(job)),
    h("td", { class: "num" }, duration(job.elapsed))));
}

/** Render the overview into `main`, and keep it live. */
export function showOverview(main) {
  document.title = "Overview · workflow-manager";
  const filters = { workflow: "", status: "", id: "" };
  const pages = [null]; // the `before` cursor of each page shown so far
  const workflowBox = h("div", { class: "table-scroll" }, h("p", { class: "muted" }, "Loading…"));
  const jobBox = h("div", { class: "table-scroll" });
  const messages = h("div", { class: "messages", "aria-live": "polite" });
  // The search's own notice: a live refresh (every job event) clears `messages`, not this.
  const searchNote = h("div", { class: "messages", "aria-live": "polite" });
  const workflowFilter = h("select", { "aria-label": "Workflow", "data-filter": "workflow" }, h("option", { value: "" }, "all workflows"));
  const statusFilter = h("select", { "aria-label": "Status", "data-filter": "status" },
    h("option", { value: "" }, "any status"), JOB_STATUSES.map((s) => h("option", { value: s }, statusLabel(s))));
  const search = h("input", { type: "search", placeholder: "Job id or its first characters", "aria-label": "Job id", "data-filter": "id", spellcheck: "false" });
  const older = h("button", { type: "button", "data-page": "older" }, "Older ›");
  const newer = h("button", { type: "button", "data-page": "newer" }, "‹ Newer");
  const since = h("span", { class: "muted" });
  const bulk = bulkActions({ filter: () => ({ ...filters }), done: () => refresh() });

  replace(
    main,
    h("h1", {}, "Overview"), messages, searchNote,
    h("section", { class: "card" }, h("div", { class: "section-head" }, h("h2", {}, "Workflows"), since), workflowBox),
    h("section", { class: "card" },
      h("div", { class: "section-head" }, h("h2", {}, "Latest jobs"),
        h("form", { class: "filters", role: "search" }, workflowFilter, statusFilter, search)),
      bulk.bar, bulk.status,
      jobBox,
      h("div", { class: "pager" }, newer, older)),
  );

  const loadWorkflows = async () => {
    const overview = await get("/api/overview");
    since.textContent = `completed, failed and cancelled since ${new Date(overview.since).toLocaleString()}`;
    const known = new Set(Array.from(workflowFilter.options).map((o) => o.value));
    for (const wf of overview.workflows) if (!known.has(wf.name)) workflowFilter.append(h("option", { value: wf.name }, wf.name));
    replace(workflowBox, overview.workflows.length
      ? table(WORKFLOW_COLUMNS, workflowRows(overview.workflows), { class: "workflows" })
      : h("p", { class: "muted" }, "No workflows are loaded."));
  };

  const loadJobs = async () => {
    const before = pages[pages.length - 1];
    const answer = await get("/api/jobs/recent", { ...filters, before, limit: 50 });
    const selectShown = bulk.head(answer.jobs); // before the rows: it keeps their selection
    replace(jobBox, answer.jobs.length
      ? table([selectShown, "Job", "Workflow", "Status", "Started", "Duration"], jobRows(answer.jobs, bulk), { class: "jobs" })
      : h("p", { class: "muted" }, "No jobs match."));
    older.disabled = answer.next_before === null || answer.next_before === undefined;
    older.onclick = () => {
      pages.push(answer.next_before);
      bulk.clear();
      loadJobs().catch(show);
    };
    newer.disabled = pages.length === 1;
  };

  const show = (error) => replace(messages, notice(`Could not load: ${error.message}`));
  const refresh = async () => {
    try {
      await Promise.all([loadWorkflows(), loadJobs()]);
      replace(messages);
    } catch (error) {
      show(error);
    }
  };
  const restart = () => {
    pages.length = 1;
    bulk.clear();
    loadJobs().catch(show);
  };
  newer.addEventListener("click", () => {
    pages.pop();
    bulk.clear();
    loadJobs().catch(show);
  });
  workflowFilter.addEventListener("change", () => {
    filters.workflow = workflowFilter.value;
    restart();
  });
  statusFilter.addEventListener("change", () => {
    filters.status = statusFilter.value;
    restart();
  });
  const typed = debounce(restart, 250);
  search.addEventListener("input", () => {
    const value = search.value.trim().toLowerCase();
    if (!/^[0-9a-f-]*$/.test(value)) {
      replace(searchNote, notice(`'${search.value.trim()}' is not the start of a job id (a UUID: 0-9, a-f and -).`));
      return;
    }
    replace(searchNote);
    filters.id = value;
    typed();
  });
  search.closest("form").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = search.value.trim();
    if (UUID.test(value)) location.assign(`/ui/job/${seg(value.toLowerCase())}`);
    else restart();
  });
  search.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && UUID.test(search.value.trim())) {
      event.preventDefault();
      location.assign(`/ui/job/${seg(search.value.trim().toLowerCase())}`);
    }
  });

  // Only the first page is live: an older page stays as it was read.
  const live = debounce(() => (pages.length === 1 ? refresh() : loadWorkflows().catch(show)), 500);
  follow({}, (event) => {
    if (event.type === "reset" || event.type.startsWith("job.")) live();
  });
  refresh();
}
