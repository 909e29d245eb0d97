"""The benchmark's workflows, job payloads and the result each job must end with (pure)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from bench.workers import LINEAR_STEPS

__all__ = [
    "LINEAR",
    "STEP_QUEUES",
    "WORDCOUNT",
    "JobSpec",
    "linear_jobs",
    "steps_of",
    "workflow_yaml",
    "wordcount_jobs",
]

WORDCOUNT = "wordcount"
LINEAR = "linear"
# Every queue a worker consumes, before the run's prefix.
STEP_QUEUES = ("split", "work", "sum", "title", *(f"s{i}" for i in range(1, LINEAR_STEPS + 1)))

_WORDCOUNT_YAML = """\
  - name: wordcount
    steps:
      - {name: split, queue: "{p}split"}
      - {name: fan, task: each, depends: [split]}
      - {name: sum, depends: [fan], queue: "{p}sum"}
      - {name: title, queue: "{p}title"}
    tasks:
      - name: each
        itemListKey: items
        steps:
          - {name: work, queue: "{p}work"}
"""


def workflow_yaml(prefix: str) -> str:
    """The manager's workflow file: word-counts shape and a 13-step chain, queues prefixed."""
    chain = [f'      - {{name: s1, queue: "{prefix}s1"}}']
    chain += [
        f'      - {{name: s{i}, depends: [s{i - 1}], queue: "{prefix}s{i}"}}'
        for i in range(2, LINEAR_STEPS + 1)
    ]
    linear = "  - name: linear\n    steps:\n" + "\n".join(chain) + "\n"
    return "workflows:\n" + _WORDCOUNT_YAML.replace("{p}", prefix) + linear


@dataclass(frozen=True)
class JobSpec:
    """One job to run: its workflow, id, payload and the result it must end with."""

    workflow: str
    job_id: str
    payload: dict[str, Any]
    expected: dict[str, Any]

    @property
    def steps(self) -> int:
        """How many worker steps the job runs (task steps run no worker and are not counted)."""
        return steps_of(self.workflow, self.payload)


def steps_of(workflow: str, payload: dict[str, Any]) -> int:
    """Worker steps of one job: split + n children + sum + title, or the chain's length."""
    if workflow == WORDCOUNT:
        return 3 + int(payload["n"])
    return LINEAR_STEPS


def wordcount_jobs(count: int, children: int = 10) -> list[JobSpec]:
    """`count` word-counts jobs, each fanning out to `children` children."""
    return [
        JobSpec(
            WORDCOUNT,
            str(uuid.uuid4()),
            {"n": children, "k": k},
            {"total": children * (children - 1) // 2, "title": f"title-{k}"},
        )
        for k in range(count)
    ]


def linear_jobs(count: int) -> list[JobSpec]:
    """`count` jobs of the 13-step chain; each step adds one to `n`."""
    return [JobSpec(LINEAR, str(uuid.uuid4()), {"n": 0}, {"n": LINEAR_STEPS}) for _ in range(count)]
