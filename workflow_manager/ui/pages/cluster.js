// The cluster: the managers sharing this journal, their partitions, and every partition's lease.

import { get } from "../api.js";
import { h, notice, replace, table } from "../dom.js";
import { statusBadge } from "../format.js";

function leaseState(lease) {
  if (lease.owner === null) return "free";
  return lease.expires_in_s < 0 ? "expired" : "held";
}

function seconds(value) {
  return value === null || value === undefined ? "–" : `${value.toFixed(1)} s`;
}

/** Render the cluster into `main`. */
export function showCluster(main) {
  document.title = "Cluster · workflow-manager";
  const messages = h("div", { class: "messages", "aria-live": "polite" });
  const managers = h("section", { class: "card" }, h("p", { class: "muted" }, "Loading…"));
  const leases = h("section", { class: "card" });
  const reload = h("button", { type: "button", "data-action": "reload" }, "Refresh");
  replace(main, h("div", { class: "title-row" }, h("h1", {}, "Cluster"), h("div", { class: "actions" }, reload)), messages, managers, leases);

  const load = async () => {
    let view;
    try {
      view = await get("/api/cluster");
    } catch (error) {
      replace(messages, notice(`Could not load the cluster: ${error.message}`));
      return;
    }
    replace(messages);
    if (view.partitions === null) {
      replace(managers, h("p", { class: "muted", "data-field": "unpartitioned" }, "This manager runs every job itself (no --partitions)."));
      replace(leases);
      return;
    }
    const rows = view.managers.map((m) => h("tr", { "data-manager": m.name },
      h("td", {}, h("code", {}, m.name), m.name === view.manager ? h("span", { class: "muted" }, " (this one)") : ""),
      h("td", { "data-field": "partitions" }, m.partitions.length ? m.partitions.join(", ") : h("span", { class: "muted" }, "standby")),
      h("td", { "data-field": "api-url" }, m.api_url === null || m.api_url === undefined ? "–" : h("code", {}, m.api_url)),
      h("td", {}, seconds(m.lease_age_s))));
    replace(managers, h("h2", {}, `${view.managers.length} manager${view.managers.length === 1 ? "" : "s"}, ${view.partitions} partitions`),
      rows.length ? table(["Manager", "Partitions", "API", "Lease age"], rows, { class: "managers" }) : h("p", { class: "muted" }, "No manager holds a lease."));
    const leaseRows = view.leases.map((lease) => h("tr", { "data-partition": String(lease.partition) },
      h("td", {}, String(lease.partition)),
      h("td", {}, statusBadge(leaseState(lease), { "data-field": "lease-state" })),
      h("td", {}, lease.owner === null ? "–" : h("code", {}, lease.owner)),
      h("td", {}, String(lease.epoch)),
      h("td", {}, seconds(lease.expires_in_s))));
    replace(leases, h("h2", {}, "Leases"), table(["Partition", "State", "Owner", "Epoch", "Expires in"], leaseRows, { class: "leases" }));
  };
  reload.addEventListener("click", () => load());
  load();
}
