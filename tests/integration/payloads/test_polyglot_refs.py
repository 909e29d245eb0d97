"""One job through the manager and real workers of all three libraries, a 3 MB value passed by
reference from step to step: pyworker stores it, jsworker and goworker resolve it, echo it and
store it again, pyworker resolves the merge of their outputs. The manager never reads it."""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from pathlib import Path

import pytest

from payload_refs import FileStore, as_ref
from tests.integration.harness import ROOT, Process, start_worker

WORKFLOW = """
workflows:
  - name: polyglot
    steps:
      - {name: produce, queue: "{p}.produce"}
      - {name: js, queue: "{p}.js", depends: [produce]}
      - {name: go, queue: "{p}.go", depends: [produce]}
      - {name: check, queue: "{p}.check", depends: [js, go]}
"""


def _needs(program: str) -> None:
    if shutil.which(program) is None:
        message = f"`{program}` is not installed (scripts/setup.sh installs it)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)


async def test_a_large_value_goes_through_python_javascript_and_go_workers(
    system, tmp_path: Path, unique: str
):
    _needs("node")
    _needs("go")
    stored = tmp_path / "payloads"
    stores = f"main=file://{stored}"
    sys_ = await system(
        WORKFLOW,
        worker="tests/integration/payloads/refworkers.py:worker",
        worker_env={"QUEUE_PREFIX": f"{unique}.", "WM_PAYLOAD_STORES": stores},
        manager_args=("--payload-store", stores),
    )
    env = {"AMQP_URL": sys_.amqp_url, "WM_PAYLOAD_STORES": stores}
    binary = tmp_path / "goecho"
    workers = [
        await Process.start("jsworker", "node", "jsworker/examples/echo.js",
                            env={**env, "QUEUE": f"{unique}.js"}),
        await Process.start(
            "goworker", "sh", "-c", f'go build -o {binary} ./examples/echo && exec {binary}',
            env={**env, "QUEUE": f"{unique}.go", "GOPROXY": "off", "GOSUMDB": "off"},
            cwd=ROOT / "goworker",
        ),
    ]  # fmt: skip
    try:
        for worker in workers:
            await worker.wait_for_line("listening on", timeout_s=120)
        job_id = str(uuid.uuid4())
        outcome = await sys_.run("polyglot", {"seed": job_id}, job_id)
    finally:
        await asyncio.gather(*(worker.stop() for worker in workers))

    assert outcome.status == "completed", outcome.body
    assert outcome.body == {"checked": True, "length": 3_000_000}  # resolved at the last step
    steps = (await sys_.http.get(f"/api/job/{job_id}/steps")).json()
    outputs = {step["name"]: step.get("output") for step in steps["steps"]}
    blob = as_ref(outputs["produce"]["blob"])  # stored by pyworker, under this job
    assert blob is not None and blob.key.startswith(f"{job_id}/") and blob.size == 3_000_002
    for name in ("js", "go"):  # each echoed the value and stored it again: the same reference
        assert as_ref(outputs[name]["blob"]) == blob, outputs[name]
    assert len(await FileStore("main", stored).get(blob)) == 3_000_002


UNREACHABLE = """
workflows:
  - name: unmounted
    steps:
      - {name: produce, queue: "{p}.produce"}
      - {name: check, queue: "{p}.check", depends: [produce], retries: 1}
"""


async def test_a_worker_that_cannot_reach_the_store_fails_the_step_which_is_retried(
    system, tmp_path: Path, unique: str
):
    stored = tmp_path / "payloads"
    sys_ = await system(
        UNREACHABLE,
        worker="tests/integration/payloads/refworkers.py:worker",
        worker_env={
            "QUEUE_PREFIX": f"{unique}.", "WM_PAYLOAD_STORES": f"main=file://{stored}",
            "REF_STEPS": "produce",
        },
        manager_args=("--payload-store", f"main=file://{stored}"),
    )  # fmt: skip
    unmounted = tmp_path / "not-mounted"  # the checking worker's copy of the store is missing
    checker = await start_worker(
        "tests/integration/payloads/refworkers.py:worker", sys_.amqp_url,
        env={"QUEUE_PREFIX": f"{unique}.", "WM_PAYLOAD_STORES": f"main=file://{unmounted}",
             "REF_STEPS": "check"},
    )  # fmt: skip
    try:
        await checker.wait_for_line("worker consuming")
        job_id = str(uuid.uuid4())
        outcome = await sys_.run("unmounted", {"seed": job_id}, job_id)
    finally:
        await checker.stop()

    assert outcome.status == "failed", outcome.body
    message = outcome.body["error"]["message"]
    assert message.startswith(f"PayloadRefError: wm://main/{job_id}/"), message
    assert message.endswith(f"file://{unmounted} is not a directory (not mounted?)"), message
    steps = (await sys_.http.get(f"/api/job/{job_id}/steps")).json()
    check = next(step for step in steps["steps"] if step["name"] == "check")
    assert check["attempts"] == 2  # retried like any failure
