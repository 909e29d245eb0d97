"""`workflow-manager replay`: a real job's journal (a real manager, real workers, RabbitMQ)
replayed through the engine, under the definition it ran and under a changed one."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

CHAIN = """
workflows:
  - name: chain
    steps:
      - {name: first, queue: "{p}.first"}
      - {name: flaky, depends: [first], queue: "{p}.flaky", retries: 2,
         retry_backoff: {initial: 0.05, max: 0.05}}
      - {name: last, depends: [flaky], queue: "{p}.last"}
"""


def _replay(db: Path, job_id: str, *config: str) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "workflow_manager", "replay", "--db", str(db), "--job", job_id]
    if config:
        args += ["--config", *config]
    return subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=60)


async def test_a_journaled_job_replays_the_same_and_a_changed_definition_diverges_where_it_acts(
    system, tmp_path
):
    sys_ = await system(CHAIN, step_queues=["first", "flaky", "last"])
    job_id = str(uuid.uuid4())
    outcome = await sys_.run("chain", {"fail_times": 1}, job_id)
    assert outcome.status == "completed", outcome.body

    same = _replay(sys_.db, job_id)
    assert same.returncode == 0, same.stdout + same.stderr
    assert f"job {job_id}: the same run" in same.stdout

    # `last` now depends on `first` alone: first's reply sends two requests, not one.
    changed = tmp_path / "changed.yaml"
    changed.write_text(
        sys_.config.read_text().replace(
            "- {name: last, depends: [flaky]", "- {name: last, depends: [first]"
        )
    )
    diverged = _replay(sys_.db, job_id, str(changed))
    assert diverged.returncode == 1, diverged.stdout + diverged.stderr
    text = diverged.stdout
    assert "diverges at journal row" in text and "the reply of step 'first' attempt 1" in text
    recorded, replayed = text.split("the replay decides:")
    assert f"request {job_id}:last" in replayed and f"request {job_id}:last" not in recorded

    missing = _replay(sys_.db, str(uuid.uuid4()))
    assert missing.returncode == 2 and "the journal has no job" in missing.stderr
