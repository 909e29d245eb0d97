"""GET /metrics of a real manager process with real workers: exact counts, and after a restart."""

from __future__ import annotations

import signal

from prometheus_client.parser import text_string_to_metric_families

WORKFLOWS = """
workflows:
  - name: flaky
    defaults: {retry_backoff: {initial: 0.01, multiplier: 1, max: 0.01}}
    steps:
      - {name: flaky, queue: "{p}.flaky", retries: 3}
  - name: squares
    steps:
      - {name: prep, queue: "{p}.prep"}
      - {name: fan, task: each, depends: [prep]}
    tasks:
      - name: each
        itemListKey: items
        steps:
          - {name: square, queue: "{p}.square"}
  - name: failing
    steps:
      - {name: boom, queue: "{p}.boom"}
  - name: manual
    steps:
      - {name: hand, queue: "{p}.hand"}
  - name: barrier
    steps:
      - {name: wait, queue: "{p}.barrier"}
"""

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(sys_) -> Samples:
    response = await sys_.http.get("/metrics")
    assert response.status_code == 200, response.text
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def by(samples: Samples, name: str, *keys: str) -> dict[tuple[str, ...], float]:
    """The samples of `name` (non-zero), keyed by the values of the labels `keys`.

    The barrier workflow's are left out.
    """
    return {
        tuple(dict(labels)[key] for key in keys): value
        for (sample, labels), value in samples.items()
        if sample == name and value and ("workflow", "barrier") not in labels
    }


async def counted(sys_) -> Samples:
    """Scrape once every event so far is counted.

    An outcome may reach us while its event commits (the manager sends it early), before the
    metrics count it. A job with an id of the manager's own sends its request only after its
    commit, and commits and their counting keep the order of events: once its request is
    here, everything before it is counted.
    """
    await sys_.trigger("barrier", {})
    await sys_.take("barrier")
    return await scrape(sys_)


async def test_a_known_run_is_counted_exactly(system):
    sys_ = await system(WORKFLOWS, step_queues=["flaky", "prep", "square", "boom"])
    assert (await sys_.run("flaky", {"fail_times": 2})).status == "completed"
    outcome = await sys_.run("squares", {"group": [1, 2, 3, 4]})
    assert outcome.status == "completed", outcome.body
    assert (await sys_.run("failing", {})).status == "failed"
    await sys_.trigger(None, {})  # no workflow header: dead-lettered
    await sys_.trigger("nope", {})
    dead = await sys_.channel.declare_queue(f"{sys_.manager.queue}.dead", durable=True)
    taken = []
    async with dead.iterator(timeout=20) as messages:  # both are there before we go on
        async for message in messages:
            await message.ack()
            taken.append(message)
            if len(taken) == 2:
                break
    assert (await sys_.run("flaky", {"fail_times": 0})).status == "completed"

    samples = await counted(sys_)
    assert by(samples, "workflow_manager_jobs_started_total", "workflow") == {
        ("flaky",): 2, ("squares",): 1, ("failing",): 1,
    }  # fmt: skip
    assert by(samples, "workflow_manager_jobs_finished_total", "workflow", "status") == {
        ("flaky", "completed"): 2, ("squares", "completed"): 1, ("failing", "failed"): 1,
    }  # fmt: skip
    assert by(samples, "workflow_manager_jobs_running", "workflow") == {}
    assert by(samples, "workflow_manager_step_requests_total", "workflow", "step") == {
        ("flaky", "flaky"): 4, ("squares", "prep"): 1, ("squares", "square"): 4,
        ("failing", "boom"): 1,
    }  # fmt: skip
    assert by(samples, "workflow_manager_step_failures_total", "step", "reason") == {
        ("flaky", "error"): 2, ("boom", "error"): 1,
    }  # fmt: skip
    assert by(samples, "workflow_manager_step_duration_seconds_count", "step") == {
        ("flaky",): 4, ("prep",): 1, ("square",): 4, ("fan",): 1, ("boom",): 1,
    }  # fmt: skip
    assert by(samples, "workflow_manager_job_duration_seconds_count", "workflow") == {
        ("flaky",): 2, ("squares",): 1, ("failing",): 1,
    }  # fmt: skip
    assert by(samples, "workflow_manager_dead_letters_total", "reason") == {
        ("invalid_trigger",): 1, ("unknown_workflow",): 1,
    }  # fmt: skip
    assert samples[("workflow_manager_broker_connected", frozenset())] == 1
    assert samples[("workflow_manager_journal_commit_seconds_count", frozenset())] > 0


async def test_jobs_running_is_right_after_a_restart(system):
    sys_ = await system(WORKFLOWS)
    # Ids of the manager's own: a job's request goes out only after its start is counted.
    await sys_.trigger("manual", {})
    await sys_.trigger("manual", {})
    requests = [await sys_.take("hand"), await sys_.take("hand")]
    first, second = (request.correlation_id.split(":")[0] for request in requests)
    samples = await scrape(sys_)
    assert by(samples, "workflow_manager_jobs_running", "workflow") == {("manual",): 2}

    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL

    samples = await scrape(sys_)
    assert by(samples, "workflow_manager_jobs_running", "workflow") == {("manual",): 2}
    assert by(samples, "workflow_manager_jobs_started_total", "workflow") == {}  # a new process
    await sys_.answer(requests[0], b'{"done": 1}')
    assert (await sys_.outcome_of(first, "manual")).status == "completed"
    samples = await counted(sys_)
    assert by(samples, "workflow_manager_jobs_running", "workflow") == {("manual",): 1}
    assert by(samples, "workflow_manager_jobs_finished_total", "workflow", "status") == {
        ("manual", "completed"): 1
    }
    await sys_.answer(requests[1], b'{"done": 2}')
    assert (await sys_.outcome_of(second, "manual")).status == "completed"
    samples = await counted(sys_)
    assert by(samples, "workflow_manager_jobs_running", "workflow") == {}
