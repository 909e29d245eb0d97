"""Routes for the dead-letter queue: what is there (with reason and age), and replaying it.

The listing comes in pages (`limit` at most `MAX_PAGE`, the next from `next_offset`), and
shows at most `PREVIEW_BYTES` of each body, saying so (`body_truncated`, `body_bytes`): an
answer stays small however large the letters are. A replay always sends the whole message.

Each call opens its own short connection to RabbitMQ (workflow_manager.deadletters), as the CLI
does: the manager's own channels stay for its traffic.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Query, Request
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from workflow_manager.api.models import ErrorBody
from workflow_manager.deadletters import DeadLetterQueue

__all__ = [
    "MAX_PAGE",
    "PREVIEW_BYTES",
    "install_dead_letters",
    "DeadLetterList",
    "ReplayRequest",
    "ReplayResult",
]

router = APIRouter()

MAX_PAGE = 100
"""The most letters one listing answers."""
PREVIEW_BYTES = 4096
"""The most bytes of each letter's body a listing shows."""


class DeadLetterEntry(BaseModel):
    """One dead letter: why it is there, where it came from, when, and the message."""

    id: str = Field(description="This letter's own id, to replay exactly it.")
    reason: str | None
    source_queue: str | None
    correlation_id: str | None
    reply_to: str | None
    message_id: str | None
    headers: dict[str, Any]
    deaths: int | None = Field(description="Times RabbitMQ dead-lettered it (x-death).")
    delivery_count: int | None
    body: str | None = Field(
        default=None,
        description=f"The body, when it is UTF-8 text: its first {PREVIEW_BYTES} bytes at most.",
    )
    body_base64: str | None = Field(default=None, description="The body, when it is not.")
    body_bytes: int = Field(description="The whole body's size, in bytes.")
    body_truncated: bool = Field(
        description="Only the start of the body is shown (a replay sends all of it)."
    )
    dead_at: str | None = Field(default=None, description="When it became a dead letter.")


class DeadLetterList(BaseModel):
    """Some dead letters, oldest first; `more` when the queue holds more after them."""

    letters: list[DeadLetterEntry]
    more: bool
    offset: int = Field(description="The place of the first letter shown (0: the oldest).")
    next_offset: int | None = Field(description="The `offset` of the next page; null at the end.")
    total: int = Field(description="How many dead letters the queue holds.")
    preview_bytes: int = Field(description="The most bytes of each body shown.")


def _one_of_schema(schema: dict[str, Any]) -> None:
    """The body's schema says what the validator checks: exactly one of the two choices."""
    for key in ("properties", "required", "additionalProperties"):
        schema.pop(key, None)
    schema["oneOf"] = [
        {"properties": {"id": {"type": "string", "minLength": 1}},
         "required": ["id"], "additionalProperties": False},
        {"properties": {"correlation_id": {"type": "string", "minLength": 1}},
         "required": ["correlation_id"], "additionalProperties": False},
        {"properties": {"all": {"const": True}}, "required": ["all"],
         "additionalProperties": False},
    ]  # fmt: skip


class ReplayRequest(BaseModel):
    """Which dead letters to replay: one letter (its `id`), those with one correlation id, or
    all of them."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_one_of_schema)
    id: str | None = Field(default=None, min_length=1, strict=True)
    correlation_id: str | None = Field(default=None, min_length=1, strict=True)
    all: bool | None = Field(default=None, strict=True)

    @model_validator(mode="after")
    def _one_choice(self) -> ReplayRequest:
        given = self.model_fields_set
        one = (given == {"correlation_id"} and self.correlation_id is not None) or (
            given == {"id"} and self.id is not None
        )
        if not (one or (given == {"all"} and self.all is True)):
            # A custom error: its message reaches the client without pydantic's "Value error, ".
            raise PydanticCustomError(
                "replay_choice",
                'send one of {"id": "<letter id>"}, {"correlation_id": "<id>"} or {"all": true}',
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
    limit: Annotated[
        int, Query(ge=1, le=MAX_PAGE, description=f"Letters to show at most ({MAX_PAGE} at most).")
    ] = MAX_PAGE,
    offset: Annotated[
        int, Query(ge=0, description="Skip this many (the previous answer's `next_offset`).")
    ] = 0,
) -> dict[str, Any]:
    """The dead letters, oldest first (they stay in the queue): reason, source, age, and the
    start of each body (at most `preview_bytes`). The next page: `offset=<next_offset>`."""
    page = await _queue(request).page(limit, offset, PREVIEW_BYTES)
    return {
        "letters": [letter.to_json() for letter in page.letters],
        "more": page.next_offset is not None,
        "offset": offset,
        "next_offset": page.next_offset,
        "total": page.total,
        "preview_bytes": PREVIEW_BYTES,
    }


@router.post(
    "/api/dead-letters/replay",
    tags=["dead letters"],
    response_model=ReplayResult,
    responses=_ERRORS,
)
async def replay(request: Request, choice: ReplayRequest) -> dict[str, Any]:
    """Publish dead letters back to the queue they came from, then remove them: one letter
    (`id`, from the listing), every letter with a correlation id, or all. Each goes whole,
    however much of it the listing showed."""
    count = await _queue(request).replay(
        choice.correlation_id, all=bool(choice.all), letter=choice.id
    )
    return {"replayed": count}


def install_dead_letters(app: FastAPI, queue: DeadLetterQueue) -> None:
    """Serve `queue` at /api/dead-letters."""
    app.state.dead_letters = queue
    app.include_router(router)
