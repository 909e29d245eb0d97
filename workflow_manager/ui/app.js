// The shell's script: route on location.pathname to a page, and show the stream's state.

import { onConnection } from "./api.js";
import { h, notice, replace } from "./dom.js";
import { offerLogout } from "./logout.js";
import { showCluster } from "./pages/cluster.js";
import { showDeadLetters } from "./pages/deadletters.js";
import { showJob } from "./pages/job.js";
import { showOverview } from "./pages/overview.js";
import { showWorkflow } from "./pages/workflow.js";

const ROUTES = [
  [/^\/ui\/?$/, "overview", () => showOverview],
  [/^\/ui\/job\/([^/]+)$/, "overview", (id) => (main) => showJob(main, decodeURIComponent(id))],
  [/^\/ui\/workflow\/([^/]+)$/, "overview", (name) => (main) => showWorkflow(main, decodeURIComponent(name))],
  [/^\/ui\/dead-letters\/?$/, "dead-letters", () => showDeadLetters],
  [/^\/ui\/cluster\/?$/, "cluster", () => showCluster],
];

const CONNECTION_TEXT = { idle: "", connecting: "connecting…", live: "live", reconnecting: "reconnecting…", closed: "disconnected" };

function start() {
  const main = document.getElementById("main");
  const indicator = document.getElementById("connection");
  offerLogout(document.getElementById("logout"));
  onConnection((state) => {
    indicator.dataset.state = state;
    indicator.textContent = CONNECTION_TEXT[state] ?? state;
    indicator.hidden = state === "idle";
  });
  for (const [pattern, nav, page] of ROUTES) {
    const match = location.pathname.match(pattern);
    if (!match) continue;
    for (const link of document.querySelectorAll("[data-nav]")) {
      if (link.dataset.nav === nav) link.setAttribute("aria-current", "page");
    }
    page(...match.slice(1))(main);
    return;
  }
  document.title = "Not found · workflow-manager";
  replace(main, h("h1", {}, "Not found"), notice(`There is no page at ${location.pathname}.`), h("a", { href: "/ui/" }, "Overview"));
}

start();
