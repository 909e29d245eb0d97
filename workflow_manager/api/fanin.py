"""The OpenAPI models of a task step's join and reduce progress (`workflow_manager.fanin`
computes them)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["JoinProgress", "ReduceProgress"]


class JoinProgress(BaseModel):
    """A task step's join (`min_success`, `first`) once it fanned out."""

    policy: str = Field(description="As the file writes it: `min_success 80%`, `first 3`.")
    needed: int = Field(description="Children that must succeed for the step to complete.")
    succeeded: int = Field(description="Children that succeeded (when the join was met, once).")
    failed: int = Field(description="Children that failed and were tolerated.")
    left: int = Field(description="Children not finished (when the join was met, once).")
    then: Literal["cancel", "finish"] = Field(
        description="What became of the children left once the join was met: cancelled, or "
        "left to finish (their results are not used)."
    )
    met: bool | None = Field(
        default=None, description="True once the step completed; false when it failed."
    )


class ReduceProgress(BaseModel):
    """A task step's reduction (`reduce`) once it fanned out."""

    step: str = Field(description="The reducer step.")
    batch: int = Field(description="Results per batch.")
    batches: int | None = Field(default=None, description="Batches reduced so far.")
    reduced: int | None = Field(default=None, description="Children whose results were reduced.")
    pending: int | None = Field(
        default=None, description="While it runs: results waiting for a batch."
    )
    in_flight: int | None = Field(
        default=None, description="While it runs: results in the batch the reducer has now."
    )
