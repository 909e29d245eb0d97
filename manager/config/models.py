"""Pydantic models of the workflow YAML, and the facts derived from them once at load time.

The models are frozen and reject unknown fields. Structural checks that need the whole
file (unknown dependencies, cycles, recursive tasks) live in `manager.config.checks`, so
that each problem can be reported with its YAML line.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property, lru_cache
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

__all__ = ["NAME_PATTERN", "Name", "Step", "Task", "Workflow", "WorkflowFile", "Flow", "singular"]

NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]*$"
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]


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


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class Step(_Model):
    """One step: a message to a worker queue, or (with `task`) one child job per list element."""

    name: Name
    depends: tuple[Name, ...] = ()
    queue: str | None = Field(default=None, min_length=1, max_length=255)
    task: Name | None = None

    @property
    def queue_name(self) -> str:
        """The queue requests for this step go to: `queue`, else the step name."""
        return self.queue or self.name


class Flow(_Model):
    """A DAG of steps: the shared shape of a workflow and a task."""

    name: Name
    steps: tuple[Step, ...] = Field(min_length=1)

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

    @cached_property
    def item_key(self) -> str:
        """The key each child gets its element under: `itemKey`, else singular(`itemListKey`)."""
        return self.item_key_override or singular(self.item_list_key)


class Workflow(Flow):
    """A named workflow: top-level steps plus the tasks its task steps refer to."""

    tasks: tuple[Task, ...] = ()
    vhosts: tuple[str, ...] = ()

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


class WorkflowFile(_Model):
    """The whole YAML document: a list of workflows."""

    workflows: tuple[Workflow, ...] = ()
