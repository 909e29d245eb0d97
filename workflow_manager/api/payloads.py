"""GET /api/payloads/{store}/{key}: download a value stored by reference.

A job's payload, a step's output or a signal may hold references
(`{"$ref": "wm://<store>/<key>", "sha256": ..., "size": ...}`, docs/protocol.md "Payloads by
reference"); the UI and the API show them as they are, and link here for the value. The value
is streamed from the manager's store in pieces, never held whole. The first piece is read before
the answer starts, so a missing value is a JSON 404, not a broken download.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query
from fastapi.responses import StreamingResponse

from payload_refs.errors import PayloadRefError
from payload_refs.refs import Ref, valid_digest, valid_key
from workflow_manager.api.models import ErrorBody
from workflow_manager.api.routes import Service

__all__ = ["router", "download_path"]

router = APIRouter()

# A key as the protocol allows it, for the OpenAPI document (no look-around: segments that are
# not `.` or `..` spelled out). `valid_key` decides; this tells clients and fuzzers.
_SEGMENT = r"(?:[A-Za-z0-9_-][A-Za-z0-9._-]*|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+)"
_KEY = rf"^{_SEGMENT}(?:/{_SEGMENT})*$"
# A store's `chunks` checks that the reference is well formed; a download without the digest
# (a link typed by hand) names none, so this stands in (stores do not check it when streaming).
_NO_DIGEST = "0" * 64


def download_path(ref: Ref) -> str:
    """Where the value `ref` names is downloaded: `/api/payloads/<store>/<key>?sha256=&size=`."""
    return f"/api/payloads/{ref.store}/{ref.key}?sha256={ref.sha256}&size={ref.size}"


def _filename(key: str) -> str:
    """The download's file name: the key's last segment (a digest, for the manager's keys)."""
    last = key.rsplit("/", 1)[-1]
    return last if last.endswith(".json") else f"{last}.json"


def _ref(store: str, key: str, sha256: str | None, size: int | None) -> Ref:
    """The reference to read: the digest and size given, else the key's last segment when it is
    a digest (the manager's and the libraries' keys are `<job>/<sha256>`)."""
    last = key.rsplit("/", 1)[-1]
    digest = sha256 if sha256 is not None else last if valid_digest(last) else _NO_DIGEST
    return Ref(store, key, digest, size if size is not None else 0)


async def _rest(first: bytes, pieces: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    yield first
    async for piece in pieces:
        yield piece


@router.get(
    "/api/payloads/{store}/{key:path}",
    tags=["jobs"],
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The stored value: the JSON text the reference stands for, as a "
            "download (`Content-Disposition: attachment`).",
            "content": {"application/json": {"schema": {}}},
        },
        400: {"model": ErrorBody, "description": "The key or the digest is malformed."},
        404: {
            "model": ErrorBody,
            "description": "The manager has no store of that name, or the store holds no such "
            "value (removed by retention, or never stored).",
        },
    },
)
async def download_payload(
    store: Annotated[str, Path(description="The store's name: `<store>` of `wm://<store>/<key>`.")],
    key: Annotated[
        str,
        Path(
            # In the document only: `valid_key` checks it and says what is wrong in words.
            json_schema_extra={"pattern": _KEY, "maxLength": 512},
            description="The value's key: `<key>` of `wm://<store>/<key>`.",
        ),
    ],
    service: Service,
    sha256: Annotated[
        str | None,
        Query(
            pattern="^[0-9a-f]{64}$",
            description="The reference's `sha256` (the UI's links give it); without it, the "
            "key's last segment when that is a digest.",
        ),
    ] = None,
    size: Annotated[
        int | None, Query(ge=0, description="The reference's `size` in bytes (the UI gives it).")
    ] = None,
) -> StreamingResponse:
    """Download the value a payload reference `wm://<store>/<key>` names, streamed from the
    manager's payload store (`--payload-store`)."""
    if not valid_key(key):
        raise HTTPException(
            status_code=400,
            detail=f"key {key!r} is not a payload key: /-separated segments of [A-Za-z0-9._-], "
            "none '.' or '..', at most 512 characters",
        )
    stores = service.payload_stores
    found = stores.get(store)
    if found is None:
        known = ", ".join(sorted(stores)) or "none: the manager runs without --payload-store"
        raise HTTPException(
            status_code=404, detail=f"no payload store named '{store}' (stores: {known})"
        )
    ref = _ref(store, key, sha256, size)
    pieces = found.chunks(ref)
    try:
        first = await anext(pieces, b"")
    except PayloadRefError as exc:
        raise HTTPException(status_code=404, detail=f"{ref.uri}: {_reason(exc, ref)}") from None
    disposition = f'attachment; filename="{_filename(key)}"'
    return StreamingResponse(
        _rest(first, pieces),
        media_type="application/json",
        headers={"Content-Disposition": disposition, "X-Content-Type-Options": "nosniff"},
    )


def _reason(exc: PayloadRefError, ref: Ref) -> str:
    """The store's message without its leading `wm://...: ` (the answer names the ref once)."""
    text = str(exc)
    prefix = f"{ref.uri}: "
    return text[len(prefix) :] if text.startswith(prefix) else text
