"""What `workflow-manager validate` prints of a loaded file: each workflow's hash, its steps
with their policies, tasks and branches, in a few lines a person can check at a glance."""

from __future__ import annotations

from workflow_manager.config.checks import number_text, quote
from workflow_manager.config.joblimits import JobLimit
from workflow_manager.config.models import Backoff, Flow, HandlerStep, Step, StepPolicy, Workflow
from workflow_manager.config.schemas import JsonSchema

__all__ = ["describe_limits", "describe_workflows", "describe_policy"]


def describe_workflows(workflows: dict[str, Workflow]) -> str:
    """A short human summary: each workflow's hash, steps and their policies, tasks, branches."""
    blocks = []
    for workflow in workflows.values():
        lines = [f"workflow {quote(workflow.name)} (hash {workflow.content_hash})"]
        if workflow.vhosts:
            lines.append(f"  vhosts: {', '.join(workflow.vhosts)}")
        if workflow.timeout is not None:
            lines.append(f"  timeout: {number_text(workflow.timeout)}s for the whole job")
        if workflow.unique is not None:
            lines.append(f"  unique: one unfinished job per key {quote(workflow.unique.key)}")
        lines += _describe_debounce(workflow)
        if workflow.payload_schema is not None:
            lines.append(f"  payload checked against {_schema_text(workflow.payload_schema)}")
        lines += _describe_starts(workflow)
        lines += _describe_steps(workflow, workflow, "  ")
        for task in workflow.tasks:
            origin = " (set by itemKey)" if task.item_key_override else ""
            key = f"itemListKey {quote(task.item_list_key)} -> item key {quote(task.item_key)}"
            failed = f"; max_failed_items {task.max_failed_items}" if task.max_failed_items else ""
            lines.append(f"  task {quote(task.name)}: {key}{origin}{failed}")
            lines += _describe_steps(workflow, task, "    ")
        for kind, branch in workflow.branches.items():
            lines.append(f"  {kind}:")
            lines += _describe_steps(workflow, branch, "    ", terminals=False)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def describe_limits(limits: tuple[JobLimit, ...]) -> str:
    """The file's nested limits, one line each, in the order a queued job names them."""
    lines = []
    for entry in limits:
        per = f" per key {quote(entry.key)}" if entry.key is not None else ""
        over = ", ".join(entry.workflows) if entry.workflows is not None else "every workflow"
        jobs = "job" if entry.limit == 1 else "jobs"
        lines.append(
            f"limit {quote(entry.name)}: at most {entry.limit} running {jobs} of {over}{per}"
        )
    return "\n".join(lines)


def _describe_debounce(workflow: Workflow) -> list[str]:
    """The workflow's debounce, if it has one: the key, the period, and which trigger runs."""
    debounce = workflow.debounce
    if debounce is None:
        return []
    starts = {
        "leading": "the first starts it at once",
        "trailing": "it starts when the period ends, with the last payload",
    }[debounce.mode]
    return [
        f"  debounce: triggers with the same key {quote(debounce.key)} within "
        f"{number_text(debounce.period)}s of the first make one job ({debounce.mode}: "
        f"{starts}); the others are answered debounced"
    ]


def _describe_starts(workflow: Workflow) -> list[str]:
    """When a workflow's jobs start by themselves (schedules), and how many run at once."""
    lines = []
    if (limit := workflow.concurrency) is not None:
        per = f" per key {quote(limit.key)}" if limit.key else ""
        lines.append(f"  concurrency: at most {limit.limit} running{per}; the others queue")
    if (rate := workflow.rate) is not None:
        per = f" per key {quote(rate.key)}" if rate.key is not None else ""
        lines.append(
            f"  rate: at most {rate.limit} jobs started in any {number_text(rate.per)}s{per};"
            " the others queue"
        )
    for schedule in workflow.schedules:
        when = (
            f"cron {quote(schedule.cron)} ({schedule.timezone})"
            if schedule.cron
            else f"every {number_text(schedule.every or 0)}s"
        )
        lines.append(f"  schedule {quote(schedule.name)}: {when}, overlap {schedule.overlap}")
    return lines


def _describe_route(step: Step) -> list[str]:
    """Where a step's work goes, as `validate` tells it: its URL, its queue, or a signal."""
    parts = [f"http {step.http.method} {quote(step.http.url)}"] if step.http else []
    if step.concurrency is not None:
        parts.append(f"at most {step.concurrency} requests out at once (all jobs)")
    if (rate := step.rate) is not None:
        per = f" per key {quote(rate.key)}" if rate.key is not None else ""
        parts.append(f"at most {rate.limit} requests started in any {number_text(rate.per)}s{per}")
    if (fairness := step.fairness) is not None:
        parts.append(f"waiting requests take turns per key {quote(fairness.key)}")
    if step.wait:
        timeout = f"; fails after {step.timeout:g}s" if step.timeout is not None else ""
        parts.append(f"waits for a signal{timeout}")
    elif step.queue or not step.task:
        parts.append(f"queue {quote(step.queue_name)}")
    return parts


def _describe_steps(
    workflow: Workflow, flow: Flow, indent: str, terminals: bool = True
) -> list[str]:
    lines = []
    for step in flow.steps:
        parts = [f"depends on {', '.join(step.depends)}"] if step.depends else []
        if step.task:
            parts.append(f"task {quote(step.task)}")
        if step.join is not None and step.join.policy != "all":
            parts.append(f"join {step.join.text} (then {step.join.then})")
        if step.reduce is not None and step.reduce_step is not None:
            reducer = step.reduce_step
            policy = describe_policy(workflow.policy(flow, reducer.name))
            detail = f"queue {quote(reducer.queue_name)}, batch {step.reduce.batch}"
            parts.append(
                f"reduce by {quote(reducer.name)} ({detail}{', ' + policy if policy else ''})"
            )
        parts += _describe_route(step)
        if step.when is not None:
            parts.append(f"runs when {quote(step.when)} (else skipped)")
        for key, schema in (("input", step.input_schema), ("output", step.output_schema)):
            if schema is not None:
                parts.append(f"{key} checked against {_schema_text(schema)}")
        if step.fallback is not None and step.fallback_step is not None:
            fallback = step.fallback
            policy = describe_policy(workflow.policy(flow, fallback.name))
            detail = f"queue {quote(fallback.queue_name)}" + (f", {policy}" if policy else "")
            parts.append(f"fallback {quote(fallback.name)} ({detail})")
        if not step.wait and (policy := describe_policy(workflow.policy(flow, step.name))):
            parts.append(policy)
        if step.compensate is not None:
            parts.append(_describe_compensation(workflow, flow, step.compensate))
        lines.append(f"{indent}step {quote(step.name)}: {'; '.join(parts)}")
    if terminals:
        lines.append(f"{indent}terminals: {', '.join(flow.terminals)}")
    return lines


def _describe_compensation(workflow: Workflow, flow: Flow, handler: HandlerStep) -> str:
    """`compensate 'refund' (queue 'refund', retries 5)`: how `validate` tells a compensation."""
    parts = [f"queue {quote(handler.queue_name)}"]
    if policy := describe_policy(workflow.policy(flow, handler.name)):
        parts.append(policy)
    return f"compensate {quote(handler.name)} ({', '.join(parts)}; runs if the job fails later)"


def _schema_text(schema: JsonSchema) -> str:
    return f"schema {quote(schema.file)}" if schema.file is not None else "an inline schema"


def describe_policy(policy: StepPolicy) -> str:
    """`retries 3, backoff 1s x2 up to 60s, timeout 30s`; '' for the built-in default."""
    parts = []
    if policy.retries or policy.retry_backoff != Backoff():
        backoff = policy.retry_backoff
        parts.append(f"retries {policy.retries}")
        parts.append(
            f"backoff {number_text(backoff.initial)}s x{number_text(backoff.multiplier)}"
            f" up to {number_text(backoff.max)}s"
        )
    if policy.timeout_s is not None:
        parts.append(f"timeout {number_text(policy.timeout_s)}s")
    return ", ".join(parts)
