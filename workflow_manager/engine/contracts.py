"""Data contracts: the JSON Schemas a definition checks payloads, inputs and outputs against.

A part (`workflow_manager.engine.extension.Part`). Each verdict is made here, from the event and
the schemas compiled into the definition, so a replay makes the same verdicts: a payload that
does not match rejects the submission, an input fails its step before any request, an output
fails that attempt (retried by the step's policy), and a child's payload that does not match
its task's `payload_schema` fails the task step before any child starts.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.config.models import Task, Workflow
from workflow_manager.engine.commands import JobRejected
from workflow_manager.engine.events import StepReplied
from workflow_manager.engine.extension import Part, Submission, Work, every_step
from workflow_manager.engine.fanout import child_payload
from workflow_manager.engine.state import Job, StepRun

__all__ = ["Contracts", "output_problem", "payload_problem"]


def payload_problem(workflow: Workflow, payload: dict[str, Any]) -> str | None:
    """Why a submission's payload does not match the workflow's `payload_schema`, or None."""
    schema = workflow.payload_schema
    problem = schema.violations(payload) if schema is not None else None
    if problem is None:
        return None
    return f"payload does not match the payload_schema of workflow '{workflow.name}': {problem}"


def output_problem(run: StepRun, output: dict[str, Any]) -> str | None:
    """Why a reply's output does not match its step's `output_schema`, or None."""
    schema = run.spec.output_schema
    problem = schema.violations(output) if schema is not None else None
    if problem is None:
        return None
    return f"output of step '{run.name}' does not match its output_schema: {problem}"


class Contracts(Part):
    """A payload, a step's input and output, and a task's children's payloads, each checked
    against its schema where the definition has one."""

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with a schema: for their payload, a task's, or a step's."""
        if workflow.payload_schema is not None:
            return True
        if any(task.payload_schema is not None for task in workflow.tasks):
            return True
        steps = every_step(workflow)
        return any(s.input_schema is not None or s.output_schema is not None for s in steps)

    def submission_refused(self, work: Work, sub: Submission) -> bool:
        """True (after rejecting it) when a new job's payload does not match the workflow's
        `payload_schema`. A duplicate trigger is answered before this, whatever its payload."""
        event = sub.event
        if sub.workflow.payload_schema is None:
            return False
        problem = payload_problem(sub.workflow, event.payload)
        if problem is None:
            return False
        work.commands.append(JobRejected(event.job_id, event.workflow, problem, event.reply_to))
        return True

    def step_starting_held(self, work: Work, job: Job, run: StepRun, data: dict[str, Any]) -> bool:
        """True (after failing the step) when its input does not match its `input_schema`."""
        schema = run.spec.input_schema
        problem = schema.violations(data) if schema is not None else None
        if problem is None:
            return False
        message = f"input of step '{run.name}' does not match its input_schema: {problem}"
        work.fail_step(job, run, message)
        return True

    def reply_problem(
        self, work: Work, job: Job, run: StepRun, event: StepReplied, output: dict[str, Any]
    ) -> str | None:
        """Why a reply's output does not match its step's `output_schema`, or None."""
        if run.spec.output_schema is None:
            return None
        return output_problem(run, output)

    def children_refused(
        self,
        work: Work,
        job: Job,
        run: StepRun,
        task: Task,
        data: dict[str, Any],
        items: list[Any],
    ) -> bool:
        """True (after failing the task step) when a child's payload does not match the task's
        `payload_schema`: checked for every element before the first child starts."""
        schema = task.payload_schema
        if schema is None:
            return False
        for index, element in enumerate(items):
            problem = schema.violations(child_payload(task, data, element))
            if problem is not None:
                message = (
                    f"task step '{run.name}': the payload of element {index} does not match the"
                    f" payload_schema of task '{task.name}': {problem}"
                )
                work.fail_step(job, run, message)
                return True
        return False
