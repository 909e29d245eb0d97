"""A task step's `reduce`: its children's results folded into one accumulator as they finish.

`reduce: {step: NAME, batch: N, initial: {...}}` sends a reducer step (a worker request on
queue `queue`, else NAME) `{accumulator, results}` for each batch of N finished children, in
the order they finished; its reply (a JSON object) is the new accumulator, and the last one
becomes the task step's output (`workflow_manager.engine.reducing`). The file-wide check that a
reducer's name is free in its flow is `workflow_manager.config.reducechecks`.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from workflow_manager.config.fields import ConfigModel, Name

__all__ = ["DEFAULT_REDUCE_BATCH", "MAX_REDUCE_BATCH", "Reduce"]

DEFAULT_REDUCE_BATCH = 100
MAX_REDUCE_BATCH = 100_000  # a batch is one request: its results travel in one message


class Reduce(ConfigModel):
    """`reduce:` of a task step: the reducer step called for each batch of finished children.

    `retries` and `timeout` are the reducer's own (else the flow's defaults, as a step's);
    each batch gets the whole retry budget. `initial` is the first batch's accumulator.
    """

    step: Name
    queue: str | None = Field(default=None, min_length=1, max_length=255)
    batch: int = Field(default=DEFAULT_REDUCE_BATCH, ge=1, le=MAX_REDUCE_BATCH, strict=True)
    initial: dict[str, Any] = Field(default_factory=dict)
    retries: int | None = Field(default=None, ge=0, le=1000, strict=True)
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False, strict=True)
