"""The README's example and the tutorial's run: their worker serves every step of their
workflow, and a job run through them (steps fed as the manager feeds them: the payload, then
the merge of the parents' outputs) ends with the result the page shows."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from docs_gen.examples import examples_in
from pyworker import StepContext, Worker
from workflow_manager.config import Workflow, parse_workflows

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", ROOT / "docs" / "tutorial" / "getting-started.md"]
PAYLOAD = {"name": "Ada"}
RESULT = {"message": "HELLO ADA!"}


def workflow_and_worker(page: Path) -> tuple[Workflow, Worker]:
    """The page's first workflow file and first worker module, loaded."""
    blocks = examples_in(page)
    yaml_text = next(block.code for block in blocks if block.lang == "yaml")
    python_text = next(block.code for block in blocks if block.lang == "python")
    (workflow,) = parse_workflows(yaml_text, page.name).values()
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    exec(compile(python_text, page.name, "exec"), namespace)
    return workflow, namespace["worker"]


async def run_job(workflow: Workflow, worker: Worker, payload: dict[str, Any]) -> dict[str, Any]:
    """The job's result: each step called in order with its input as the manager builds it."""
    outputs: dict[str, dict[str, Any]] = {}
    with ThreadPoolExecutor(max_workers=1) as executor:
        for step in workflow.steps:  # the examples declare parents before their children
            data: dict[str, Any] = {} if step.depends else dict(payload)
            for parent in reversed(step.depends):  # the first parent listed wins a key
                data.update(outputs[parent])
            ctx = StepContext(
                job_id="job", step=step.name, attempt=1, correlation_id=None,
                workflow=workflow.name, headers={},
            )  # fmt: skip
            outputs[step.name] = await worker.handlers[step.name].invoke(data, ctx, executor)
    depended_on = {parent for step in workflow.steps for parent in step.depends}
    result: dict[str, Any] = {}
    for step in reversed([s for s in workflow.steps if s.name not in depended_on]):
        result.update(outputs[step.name])
    return result


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_the_worker_serves_every_step_of_the_workflow(page: Path) -> None:
    workflow, worker = workflow_and_worker(page)
    assert set(worker.handlers) == {step.name for step in workflow.steps}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
async def test_a_job_ends_with_the_result_the_page_shows(page: Path) -> None:
    workflow, worker = workflow_and_worker(page)
    assert await run_job(workflow, worker, PAYLOAD) == RESULT
    text = page.read_text()
    # The page's command and the result it shows (`"message": "HELLO ADA!"`) are these.
    assert json.dumps(PAYLOAD) in text and json.dumps(RESULT)[1:-1] in text
