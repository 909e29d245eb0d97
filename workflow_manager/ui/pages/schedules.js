// A workflow's schedules on its page: when each fires next, its last job, and Pause / Resume.

import { get, post, seg } from "../api.js";
import { confirmAction } from "../dialog.js";
import { h, notice, replace, table } from "../dom.js";
import { shortId, time } from "../format.js";

function when(schedule) {
  return schedule.cron ? `cron ${schedule.cron} (${schedule.timezone})` : `every ${schedule.every} s`;
}

function toggle(schedule, box, workflow) {
  const action = schedule.paused ? "resume" : "pause";
  const label = schedule.paused ? "Resume" : "Pause";
  return h("button", {
    type: "button",
    "data-action": action,
    onclick: async () => {
      const ok = await confirmAction({
        title: `${label} schedule ${schedule.name}?`,
        message: schedule.paused
          ? "It fires again from its next fire time on."
          : "It fires no job until it is resumed, across restarts too.",
        confirm: label,
      });
      if (!ok) return;
      try {
        await post(`/api/schedules/${seg(workflow)}/${seg(schedule.name)}/${action}`);
      } catch (error) {
        replace(box, notice(`Could not ${action} it: ${error.message}`));
        return;
      }
      await fillSchedules(box, workflow);
    },
  }, label);
}

function rows(schedules, box, workflow) {
  return schedules.map((schedule) => h("tr", { "data-schedule": schedule.name },
    h("th", { scope: "row" }, schedule.name),
    h("td", {}, when(schedule)),
    h("td", {}, schedule.paused
      ? h("span", { class: "badge status-paused", "data-field": "schedule-state" }, "⏸ paused")
      : h("span", { "data-field": "schedule-state" }, "next ", time(new Date(schedule.next_fire_at * 1000).toISOString()))),
    h("td", {}, schedule.last_job ? h("a", { href: `/ui/job/${seg(schedule.last_job)}` }, shortId(schedule.last_job)) : "–"),
    h("td", {}, toggle(schedule, box, workflow))));
}

/** Fill `box` with the schedules of `workflow` (none: says so). */
export async function fillSchedules(box, workflow) {
  let answer;
  try {
    answer = await get("/api/schedules");
  } catch (error) {
    replace(box, notice(`Could not load the schedules: ${error.message}`));
    return;
  }
  const mine = answer.schedules.filter((schedule) => schedule.workflow === workflow);
  replace(box, mine.length
    ? h("div", { class: "table-scroll" }, table(["Schedule", "When", "State", "Last job", ""], rows(mine, box, workflow), { class: "schedules" }))
    : h("p", { class: "muted" }, "No schedules: jobs start when triggered."));
}
