"""Pydantic models of the workflow YAML, and the facts derived from them once at load time.

The models are frozen and reject unknown fields. Structural checks that need the whole
file (unknown dependencies, cycles, recursive tasks) live in `workflow_manager.config.checks`, so
that each problem can be reported with its YAML line.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cached_property, lru_cache
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from workflow_manager.config.expressions import (
    Expression,
    compile_expression,
)
from workflow_manager.config.fields import (
    NAME_PATTERN,
    ConfigModel,
    ExpressionText,
    Name,
)
from workflow_manager.config.flowcontrol import (
    MAX_DEBOUNCE_PERIOD_S,
    MAX_FAIR_WEIGHT,
    MAX_RATE_LIMIT,
    MAX_RATE_PER_S,
    Concurrency,
    Debounce,
    Fairness,
    Rate,
    UniqueKey,
)
from workflow_manager.config.joblimits import JobLimit
from workflow_manager.config.joins import Join
from workflow_manager.config.reduce import Reduce
from workflow_manager.config.schedules import Schedule
from workflow_manager.config.schemas import JsonSchema
from workflow_manager.config.webhooks import Trigger, Webhook

__all__ = [
    "NAME_PATTERN",
    "Name",
    "Backoff",
    "Policy",
    "StepPolicy",
    "HttpCall",
    "ENV_REFERENCE",
    "HandlerStep",
    "Step",
    "Concurrency",
    "Rate",
    "MAX_RATE_LIMIT",
    "MAX_RATE_PER_S",
    "Flow",
    "Task",
    "UniqueKey",
    "Debounce",
    "Fairness",
    "MAX_FAIR_WEIGHT",
    "MAX_DEBOUNCE_PERIOD_S",
    "Workflow",
    "WorkflowFile",
    "singular",
]


@lru_cache(maxsize=1)
def _inflect_engine() -> Any:
    import inflect  # imported on first use: only workflows with tasks need it

    return inflect.engine()


def singular(plural: str) -> str:
    """The singular form inflect gives for `plural`, or `plural` itself when it is not a plural."""
    if not plural.strip():
        return plural  # inflect raises IndexError on blank text
    result = _inflect_engine().singular_noun(plural)
    return result if isinstance(result, str) and result else plural


# Numbers are strict: in YAML, `retries: yes` or `timeout: "30"` is a mistake, not 1 or 30.0.


class Backoff(ConfigModel):
    """Waits between attempts: `initial` seconds, times `multiplier` each time, at most `max`."""

    initial: float = Field(default=1.0, ge=0, allow_inf_nan=False, strict=True)
    multiplier: float = Field(default=2.0, ge=1, allow_inf_nan=False, strict=True)
    max: float = Field(default=60.0, ge=0, allow_inf_nan=False, strict=True)

    def nominal_s(self, retry: int) -> float:
        """The nominal wait before retry number `retry` (1-based)."""
        return min(self.max, self.initial * self.multiplier ** (retry - 1))


class Policy(ConfigModel):
    """Failure handling a step may set, and `defaults:` may set for the steps below it."""

    retries: int | None = Field(default=None, ge=0, le=1000, strict=True)
    retry_backoff: Backoff | None = None
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False, strict=True)


class StepPolicy(ConfigModel):
    """A step's effective policy: its own setting, else its task's defaults, else the workflow's."""

    retries: int = 0
    retry_backoff: Backoff = Backoff()
    timeout_s: float | None = None


# `${NAME}` in an HTTP step's header value: replaced by the environment variable when the
# bridge starts, so secrets stay out of the workflow file.
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HEADER_NAME = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"  # an HTTP token (RFC 9110)
HeaderName = Annotated[str, StringConstraints(pattern=_HEADER_NAME)]


class HttpCall(ConfigModel):
    """An HTTP step's call: the bridge sends the step input as the JSON body of a request."""

    url: str = Field(min_length=1)
    method: Literal["POST", "PUT", "PATCH"] = "POST"
    headers: dict[HeaderName, str] = Field(default_factory=dict)
    timeout: float = Field(default=10.0, gt=0, allow_inf_nan=False, strict=True)

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"{url!r} is not an http(s) URL; write e.g. url: https://api.example.com/score"
            )
        return url

    @field_validator("headers")
    @classmethod
    def _references(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if "${" in ENV_REFERENCE.sub("", value):
                raise ValueError(
                    f"header {name!r}: a '${{' starts no variable reference; write ${{NAME}} "
                    "with NAME made of letters, digits and '_'"
                )
        return headers

    @property
    def env_vars(self) -> tuple[str, ...]:
        """The environment variables the header values name, in order of first use."""
        names = (m.group(1) for v in self.headers.values() for m in ENV_REFERENCE.finditer(v))
        return tuple(dict.fromkeys(names))


class HandlerStep(ConfigModel):
    """A step that handles another step's outcome (`compensate`, `fallback`): a request to a
    worker queue.

    Its policy fields fall back to the flow's defaults like a step's; it has no dependencies.
    """

    name: Name
    queue: str | None = Field(default=None, min_length=1, max_length=255)
    retries: int | None = Field(default=None, ge=0, le=1000, strict=True)
    retry_backoff: Backoff | None = None
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False, strict=True)

    @property
    def queue_name(self) -> str:
        """The queue its requests go to: `queue`, else its name."""
        return self.queue or self.name


class Step(ConfigModel):
    """One step: a message to a worker queue, or (with `task`) one child job per list element.

    With `http`, the step's requests are served by `workflow-manager bridge`, which calls the URL.
    """

    name: Name
    depends: tuple[Name, ...] = ()
    queue: str | None = Field(default=None, min_length=1, max_length=255)
    task: Name | None = None
    http: HttpCall | None = None
    retries: int | None = Field(default=None, ge=0, le=1000, strict=True)
    retry_backoff: Backoff | None = None
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False, strict=True)
    when: ExpressionText | None = None
    # No request: the step waits for a signal (HTTP, `<queue>.signals`, CLI) and its JSON
    # object becomes the output. Only its own `timeout` applies (not the flow's defaults).
    wait: bool = Field(default=False, strict=True)
    # Checked before a request is sent (a mismatch fails the step), and on each reply (a
    # mismatch fails that attempt, like an x-error).
    input_schema: JsonSchema | None = None
    output_schema: JsonSchema | None = None
    # Gets a request when the step fails for good; its output then becomes the step's.
    fallback: HandlerStep | None = None
    # Undoes the step once it completed, when its job later fails or is cancelled.
    compensate: HandlerStep | None = None
    # At most this many requests of the step outstanding, all jobs and children together.
    concurrency: int | None = Field(default=None, ge=1, strict=True)
    # At most `rate.limit` requests of the step started in any `rate.per` seconds.
    rate: Rate | None = None
    # Its dispatches waiting for its `concurrency` or `rate` take turns by this key.
    fairness: Fairness | None = None
    # A task step: when its children are enough (`workflow_manager.config.joins`); None: all.
    join: Join | None = None
    # A task step: its children's results folded by a reducer step as they finish.
    reduce: Reduce | None = None

    @cached_property
    def waits_for(self) -> int:
        """How many steps must end before this one is ready: its distinct `depends`."""
        return len(set(self.depends))

    @cached_property
    def condition(self) -> Expression | None:
        """`when`, compiled (once per definition: the loader computes it at load)."""
        return compile_expression(self.when) if self.when is not None else None

    @model_validator(mode="after")
    def _concurrency_needs_requests(self) -> Step:
        if self.rate is not None and self.task is not None:
            raise ValueError(
                "rate bounds the requests a step starts, and a task step sends none; "
                "put the rate on the steps of its task"
            )
        if self.concurrency is not None and self.task is not None:
            raise ValueError(
                "concurrency bounds a step's outstanding requests, and a task step sends none; "
                "bound its children with the task's max_in_flight"
            )
        if self.fairness is not None and self.concurrency is None and self.rate is None:
            raise ValueError(
                "a step's fairness orders its dispatches that wait for its concurrency or "
                "rate, and this step has neither; add one (e.g. concurrency: 10), or put "
                "fairness on the workflow"
            )
        if self.join is not None and self.task is None:
            raise ValueError("join says when a task step's children are enough; add task: NAME")
        if self.reduce is not None and self.task is None:
            raise ValueError("reduce folds a task step's children's results; add task: NAME")
        return self

    @property
    def queue_name(self) -> str:
        """The queue requests for this step go to: `queue`, else the step name."""
        return self.queue or self.name

    @cached_property
    def fallback_step(self) -> Step | None:
        """`fallback` as a step of its own (no dependencies), for the engine to run."""
        if self.fallback is None:
            return None
        return Step.model_validate(self.fallback.model_dump(exclude_defaults=True))

    @cached_property
    def reduce_step(self) -> Step | None:
        """`reduce`'s reducer as a step of its own (no dependencies), for the engine to run."""
        if self.reduce is None:
            return None
        reducer = self.reduce
        own = {"queue": reducer.queue, "retries": reducer.retries, "timeout": reducer.timeout}
        return Step.model_validate(
            {"name": reducer.step, **{k: v for k, v in own.items() if v is not None}}
        )


class Flow(ConfigModel):
    """A DAG of steps: the shared shape of a workflow and a task."""

    name: Name
    steps: tuple[Step, ...] = Field(min_length=1)
    defaults: Policy = Policy()

    @cached_property
    def step_index(self) -> dict[str, int]:
        """Position of each step in declaration order."""
        return {step.name: i for i, step in enumerate(self.steps)}

    @cached_property
    def dependents(self) -> dict[str, tuple[str, ...]]:
        """For each step, the steps that list it in `depends`, in declaration order."""
        result: dict[str, list[str]] = {step.name: [] for step in self.steps}
        for step in self.steps:
            for parent in dict.fromkeys(step.depends):
                if parent in result:
                    result[parent].append(step.name)
        return {name: tuple(children) for name, children in result.items()}

    @cached_property
    def terminals(self) -> tuple[str, ...]:
        """Steps no other step depends on, in declaration order: their outputs form the result."""
        return tuple(name for name, children in self.dependents.items() if not children)


class Task(Flow):
    """A sub-workflow run once per element of the list at `itemListKey` in the step's input."""

    item_list_key: str = Field(alias="itemListKey", min_length=1)
    item_key_override: str | None = Field(default=None, alias="itemKey", min_length=1)
    max_failed_items: int = Field(default=0, ge=0, strict=True)
    # Children running at once; the next starts as one finishes. It bounds the manager's
    # memory for a wide fan-out (and what lands on the workers' queues at once).
    max_in_flight: int = Field(default=1_000, ge=1, strict=True)
    payload_schema: JsonSchema | None = None  # each child's payload, checked at fan-out

    @cached_property
    def item_key(self) -> str:
        """The key each child gets its element under: `itemKey`, else singular(`itemListKey`)."""
        return self.item_key_override or singular(self.item_list_key)


class Workflow(Flow):
    """A named workflow: top-level steps plus the tasks its task steps refer to."""

    tasks: tuple[Task, ...] = ()
    vhosts: tuple[str, ...] = ()
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False, strict=True)
    on_error: tuple[Step, ...] = ()
    on_cancel: tuple[Step, ...] = ()
    payload_schema: JsonSchema | None = None  # a trigger's payload, checked at submission
    unique: UniqueKey | None = None  # refuse a job whose key an unfinished job already has
    concurrency: Concurrency | None = None
    # At most `rate.limit` top-level jobs started in any `rate.per` seconds (per key).
    rate: Rate | None = None
    schedules: tuple[Schedule, ...] = ()
    debounce: Debounce | None = None  # triggers with one key within a period make one job
    fairness: Fairness | None = None  # waiting work released round-robin across keys
    triggers: tuple[Trigger, ...] = ()  # webhooks whose requests start a job

    @field_validator("schedules")
    @classmethod
    def _unique_schedules(cls, schedules: tuple[Schedule, ...]) -> tuple[Schedule, ...]:
        names = [schedule.name for schedule in schedules]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"schedule names must differ; {', '.join(map(repr, twice))} repeats")
        return schedules

    @cached_property
    def branches(self) -> dict[str, Flow]:
        """The `on_error` and `on_cancel` steps as flows of their own (absent when empty)."""
        # Built without validation: the steps are validated already, and the name (which
        # no user wrote) must not be mistaken for a task's.
        return {
            kind: Flow.model_construct(name=kind, steps=steps, defaults=Policy())
            for kind, steps in (("on_error", self.on_error), ("on_cancel", self.on_cancel))
            if steps
        }

    @cached_property
    def policies(self) -> dict[tuple[int, str], StepPolicy]:
        """Each step's effective policy by (id of its flow, step name): computed once at load."""
        result: dict[tuple[int, str], StepPolicy] = {}
        flows: list[tuple[Flow, Policy | None]] = [(self, None)]
        flows += [(task, task.defaults) for task in self.tasks]
        flows += [(branch, None) for branch in self.branches.values()]
        for flow, task_defaults in flows:
            for step in flow.steps:
                result[(id(flow), step.name)] = _effective(step, task_defaults, self.defaults)
                if step.fallback is not None:
                    own = _effective(step.fallback, task_defaults, self.defaults)
                    result[(id(flow), step.fallback.name)] = own
                if step.compensate is not None:
                    own = _effective(step.compensate, task_defaults, self.defaults)
                    result[(id(flow), step.compensate.name)] = own
                if step.reduce_step is not None:
                    own = _effective(step.reduce_step, task_defaults, self.defaults)
                    result[(id(flow), step.reduce_step.name)] = own
        return result

    @cached_property
    def compensates(self) -> bool:
        """True when a step of the workflow or of one of its tasks has `compensate`.

        Only then do its jobs keep the order their steps complete in (and their completed
        children's compensations): a workflow without one pays nothing.
        """
        flows: list[Flow] = [self, *self.tasks]
        return any(step.compensate is not None for flow in flows for step in flow.steps)

    def policy(self, flow: Flow, step: str) -> StepPolicy:
        """The effective policy of `step` in `flow` (the workflow, one of its tasks or branches)."""
        return self.policies[(id(flow), step)]

    @cached_property
    def task_by_name(self) -> dict[str, Task]:
        """The workflow's tasks by name."""
        return {task.name: task for task in self.tasks}

    @cached_property
    def content_hash(self) -> str:
        """A stable hash of the definition, to pin running jobs to the version they started with."""
        canonical = json.dumps(
            self.model_dump(mode="json", by_alias=True, exclude_defaults=True),
            sort_keys=True,
            separators=(",", ":"),
        )
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def __repr__(self) -> str:
        return f"<Workflow {self.name} {len(self.steps)} steps {self.content_hash}>"


def _effective(
    step: Step | HandlerStep | Policy, task: Policy | None, workflow: Policy
) -> StepPolicy:
    """The first setting found: the step's own, its task's defaults, the workflow's defaults."""
    layers: list[Step | HandlerStep | Policy] = [step, *([task] if task else []), workflow]

    def pick(field: str) -> object:
        return next(
            (getattr(layer, field) for layer in layers if getattr(layer, field) is not None), None
        )

    retries, backoff, timeout = pick("retries"), pick("retry_backoff"), pick("timeout")
    return StepPolicy(
        retries=retries if isinstance(retries, int) else 0,
        retry_backoff=backoff if isinstance(backoff, Backoff) else Backoff(),
        timeout_s=timeout if isinstance(timeout, float | int) else None,
    )


class WorkflowFile(ConfigModel):
    """The whole YAML document: a list of workflows, and the webhook sources that trigger them."""

    workflows: tuple[Workflow, ...] = ()
    webhooks: tuple[Webhook, ...] = ()
    limits: tuple[JobLimit, ...] = ()  # nested limits of running jobs, over workflows
