"""`serve --log-format json`: every line the manager prints is JSON; job lines carry the ids."""

from __future__ import annotations

import json
import uuid

FLAKY = """
workflows:
  - name: flaky
    steps:
      - {name: hand, queue: "{p}.hand", retries: 1,
         retry_backoff: {initial: 0.01, multiplier: 1, max: 0.01}}
"""


async def test_every_line_is_json_and_job_lines_carry_job_workflow_and_step(system):
    sys_ = await system(FLAKY, manager_args=("--log-format", "json"))
    job_id = str(uuid.uuid4())
    replies = await sys_.reply_queue()
    await sys_.trigger("flaky", {}, job_id, replies.name)
    for _ in range(2):  # the first attempt and its retry both fail
        await sys_.answer(await sys_.take("hand"), b"", **{"x-error": "nope"})
    assert (await sys_.next_outcome(replies)).status == "failed"
    await sys_.manager.process.wait_for_line(r"job failed")
    assert await sys_.manager.process.stop() == 0

    entries = []
    for line in sys_.manager.process.lines:
        entry = json.loads(line)  # fails the test on any line that is not JSON
        assert {"time", "level", "logger", "message"} <= set(entry), line
        entries.append(entry)
    by_message = {e["message"].split(" job=")[0]: e for e in entries if e.get("job") == job_id}
    assert by_message["job started"]["workflow"] == "flaky"
    assert by_message["retry scheduled"]["step"] == "hand"
    assert by_message["retry scheduled"]["attempt"] == 2
    failed = by_message["job failed"]
    assert (failed["workflow"], failed["step"], failed["level"]) == ("flaky", "hand", "INFO")
    assert any("HTTP API on" in e["message"] for e in entries)
