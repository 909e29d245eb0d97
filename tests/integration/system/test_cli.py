"""The `workflow-manager` command as a user runs it: real subprocesses, real exit codes."""

from __future__ import annotations

import json
import uuid

from ..harness import cli

ONE_STEP = """
workflows:
  - name: one
    steps:
      - {name: only, queue: "{p}.only"}
      - {name: boom, queue: "{p}.boom", depends: [only]}
  - name: fine
    steps:
      - {name: only, queue: "{p}.only"}
"""


async def test_help_shows_examples_and_exit_codes():
    code, out, _ = await cli("--help")
    assert code == 0
    assert "workflow-manager submit book-word-counts" in out
    assert "exit codes" in out


async def test_validate_describes_a_good_file():
    code, out, _ = await cli("validate", "workflows.yaml")
    assert code == 0
    assert "book-word-counts" in out and "'section'" in out


async def test_validate_reports_a_bad_file_without_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("workflows:\n  - name: w\n    steps:\n      - name: a\n        depend: [b]\n")
    code, out, err = await cli("validate", str(bad))
    assert code == 1
    assert "bad.yaml:5" in err and "did you mean 'depends'" in err
    assert "Traceback" not in out + err


async def test_submit_wait_prints_the_result_and_exit_code(system, amqp_url):
    sys_ = await system(ONE_STEP, step_queues=["only", "boom"])
    common = [
        "--amqp-url",
        amqp_url,
        "--queue",
        sys_.manager.queue,
        "--api-url",
        sys_.manager.api_url,
    ]
    code, out, err = await cli("submit", "fine", "--payload", '{"a": 1}', "--wait", *common)
    assert code == 0, err
    printed = json.loads(out)
    assert printed["status"] == "completed" and printed["result"]["a"] == 1
    job_id = str(uuid.uuid4())
    code, out, _ = await cli("submit", "one", "--id", job_id, "--wait", *common)
    assert code == 1
    assert json.loads(out)["error"]["step"] == "boom"
    code, out, _ = await cli("status", job_id, "--api-url", sys_.manager.api_url)
    assert code == 0
    assert job_id in out and "failed" in out and "boom" in out


async def test_submit_with_only_api_url_goes_over_http_to_a_manager_on_another_queue(system):
    # The manager's queue is this test's own, not the default a trigger would be published to.
    sys_ = await system(ONE_STEP, step_queues=["only", "boom"])
    api = ["--api-url", sys_.manager.api_url]
    job_id = str(uuid.uuid4())
    code, out, err = await cli("submit", "fine", "--id", job_id, "--payload", '{"a": 2}', *api)
    assert (code, out.strip()) == (0, job_id), err
    code, out, err = await cli("submit", "fine", "--payload", '{"a": 3}', "--wait", *api)
    assert code == 0, err
    printed = json.loads(out)
    assert printed["status"] == "completed" and printed["result"]["a"] == 3
    code, out, err = await cli("submit", "one", "--wait", *api)
    assert code == 1 and json.loads(out)["error"]["step"] == "boom", err
    code, _, err = await cli("submit", "nope", *api)
    assert code == 1 and "unknown workflow 'nope'" in err and "Traceback" not in err
    assert (await sys_.found(f"/api/job/{job_id}"))["status"] in ("running", "completed")


async def test_bad_arguments_and_unreachable_services_have_their_exit_codes():
    code, _, err = await cli("submit", "one", "--payload", "[1]")
    assert code == 2 and "--payload must be a JSON object" in err
    code, _, err = await cli("submit", "one", "--amqp-url", "amqp://guest:guest@127.0.0.1:1/")
    assert code == 3 and "cannot connect to RabbitMQ" in err
    code, _, err = await cli("status", str(uuid.uuid4()), "--api-url", "http://127.0.0.1:1")
    assert code == 3 and "cannot reach" in err
    assert "Traceback" not in err


MANUAL = """
workflows:
  - name: manual
    steps:
      - {name: hand, queue: "{p}.hand"}
"""


async def test_cancel_and_retry_commands(system):
    sys_ = await system(MANUAL)
    api = ["--api-url", sys_.manager.api_url]
    running, failing = str(uuid.uuid4()), str(uuid.uuid4())
    for job_id in (running, failing):
        await sys_.trigger("manual", {}, job_id)
    first, second = await sys_.take("hand"), await sys_.take("hand")
    to_fail = first if first.correlation_id.startswith(failing) else second
    await sys_.answer(to_fail, b"", **{"x-error": "nope"})
    await sys_.outcome_of(failing, "manual")

    code, out, err = await cli("cancel", running, *api)
    assert (code, out.strip()) == (0, f"job {running}: cancelled"), err
    code, _, err = await cli("cancel", running, *api)
    assert code == 1 and "already cancelled" in err
    code, _, err = await cli("retry", running, *api)
    assert code == 1 and "only a failed job can be retried" in err
    code, out, _ = await cli("retry", failing, *api)
    assert (code, out.strip()) == (0, f"job {failing}: running")
    again = await sys_.take("hand")
    assert again.headers["x-attempt"] == 2
    code, _, err = await cli("cancel", "not-a-uuid", *api)
    assert code == 2 and "not a job id" in err
