"""`workflow-manager watch JOB_ID` run as a user runs it: a process, its output, its exit code."""

from __future__ import annotations

import asyncio
import sys
import uuid

from ..harness import Process


async def _watch(site, job_id: str) -> Process:
    return await Process.start(
        "watch",
        sys.executable,
        "-m",
        "workflow_manager",
        "watch",
        job_id,
        "--api-url",
        site.manager.api_url,
    )


async def _exit_code(watch: Process) -> int:
    """Wait for watch to end by itself (it must: the job ended), then its exit code."""
    await asyncio.wait_for(watch.proc.wait(), 30)
    return await watch.stop()


async def test_watch_follows_a_fan_out_until_it_completes(site):
    running = await site()
    job_id = str(uuid.uuid4())
    await running.submit("fan", {"group": [1, 2, 3]}, job_id)  # no worker yet: it waits
    watch = await _watch(running, job_id)
    await watch.wait_for_line(rf"job {job_id}  fan  running")
    await running.start_worker()
    code = await _exit_code(watch)
    output = watch.output
    assert code == 0, output
    assert "step.completed prep attempt 1" in output, output
    assert "step.completed each" in output, output
    assert "[########################] 3/3" in output, output
    assert f"job {job_id}  fan  completed" in output, output


async def test_watch_exits_1_for_a_failed_job_and_shows_the_error(site):
    running = await site()
    await running.start_worker()
    job_id = str(uuid.uuid4())
    await running.submit("bad", {}, job_id)
    await running.outcome_of(job_id)
    watch = await _watch(running, job_id)  # after the end: it shows the job and exits
    code = await _exit_code(watch)
    assert code == 1, watch.output
    assert "✗ boom" in watch.output and "boom in boom" in watch.output, watch.output


async def test_watch_of_an_unknown_job_says_so(site):
    running = await site()
    job_id = str(uuid.uuid4())
    watch = await _watch(running, job_id)
    assert await _exit_code(watch) == 1
    assert f"error: no job {job_id}" in watch.output
    assert "Traceback" not in watch.output


async def test_submit_wait_shows_progress_from_the_event_stream(site):
    running = await site()
    submit = await Process.start(
        "submit", sys.executable, "-m", "workflow_manager", "submit", "one", "--wait",
        "--amqp-url", running.amqp_url, "--queue", running.manager.queue,
        "--api-url", running.manager.api_url,
    )  # fmt: skip
    # No worker yet: the job waits, and its job.started / step.dispatched events show it.
    await submit.wait_for_line(r"^running: steps 0/1")
    await running.start_worker()
    assert await _exit_code(submit) == 0, submit.output
    assert '"status": "completed"' in submit.output
