"""Routes for the dead-letter queue: what is there (with reason and age), and replaying it.

Each call opens its own short connection to RabbitMQ (manager.deadletters), as the CLI does:
the manager's own channels stay for its traffic.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Query, Request
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from manager.api.models import ErrorBody
from manager.deadletters import DeadLetterQueue

__all__ = [
    "install_dead_letters",
    "DeadLetterList",
    "ReplayRequest",
    "ReplayResult",
]

router = APIRouter()


class DeadLetterEntry(BaseModel):
    """One dead letter: why it is there, where it came from, when, and the message."""

    reason: str | None
    source_queue: str | None
    correlation_id: str | None
    reply_to: str | None
    message_id: str | None
    headers: dict[str, Any]
    deaths: int | None = Field(description="Times RabbitMQ dead-lettered it (x-death).")
    delivery_count: int | None
    body: str | None = Field(default=None, description="The body, when it is UTF-8 text.")
    body_base64: str | None = Field(default=None, description="The body, when it is not.")
    dead_at: str | None = Field(default=None, description="When it became a dead letter.")


class DeadLetterList(BaseModel):
    """The first dead letters, oldest first; `more` when the queue holds more than shown."""

    letters: list[DeadLetterEntry]
    more: bool


def _one_of_schema(schema: dict[str, Any]) -> None:
    """The body's schema says what the validator checks: exactly one of the two choices."""
    for key in ("properties", "required", "additionalProperties"):
        schema.pop(key, None)
    schema["oneOf"] = [
        {"properties": {"correlation_id": {"type": "string", "minLength": 1}},
         "required": ["correlation_id"], "additionalProperties": False},
        {"properties": {"all": {"const": True}}, "required": ["all"],
         "additionalProperties": False},
    ]  # fmt: skip


class ReplayRequest(BaseModel):
    """Which dead letters to replay: those with one correlation id, or all of them."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_one_of_schema)
    correlation_id: str | None = Field(default=None, min_length=1, strict=True)
    all: bool | None = Field(default=None, strict=True)

    @model_validator(mode="after")
    def _one_choice(self) -> ReplayRequest:
        given = self.model_fields_set
        one = given == {"correlation_id"} and self.correlation_id is not None
        if not (one or (given == {"all"} and self.all is True)):
            # A custom error: its message reaches the client without pydantic's "Value error, ".
            raise PydanticCustomError(
                "replay_choice", 'send either {"correlation_id": "<id>"} or {"all": true}'
            )
        return self


class ReplayResult(BaseModel):
    """How many dead letters went back to the queue they came from."""

    replayed: int


def _queue(request: Request) -> DeadLetterQueue:
    queue: DeadLetterQueue = request.app.state.dead_letters
    return queue


_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody},
    503: {"model": ErrorBody, "description": "RabbitMQ cannot be reached."},
}


@router.get("/api/dead-letters", tags=["dead letters"], response_model=DeadLetterList,
            responses=_ERRORS)  # fmt: skip
async def dead_letters(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=1000, description="Letters to show at most.")] = 100,
) -> dict[str, Any]:
    """The dead letters, oldest first (they stay in the queue): reason, source, age, body."""
    letters = await _queue(request).letters(limit + 1)
    shown = [letter.to_json() for letter in letters[:limit]]
    return {"letters": shown, "more": len(letters) > limit}


@router.post(
    "/api/dead-letters/replay",
    tags=["dead letters"],
    response_model=ReplayResult,
    responses=_ERRORS,
)
async def replay(request: Request, choice: ReplayRequest) -> dict[str, Any]:
    """Publish dead letters back to the queue they came from, then remove them."""
    count = await _queue(request).replay(choice.correlation_id, all=bool(choice.all))
    return {"replayed": count}


def install_dead_letters(app: FastAPI, queue: DeadLetterQueue) -> None:
    """Serve `queue` at /api/dead-letters."""
    app.state.dead_letters = queue
    app.include_router(router)
