"""The two moves every party makes with references: resolve them in a message it received, and
store the large top-level values of a message it sends."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

import orjson

from payload_refs.errors import PayloadRefError
from payload_refs.refs import Ref, as_ref, refs_in
from payload_refs.stores import PayloadStore

__all__ = ["DEFAULT_THRESHOLD", "MIN_STORED", "encode", "offload", "resolve", "store_for"]

DEFAULT_THRESHOLD = 256 * 1024  # a message's JSON text above this has values stored
MIN_STORED = 1024  # a value this small is never stored: its reference is not much smaller
_LONG_DIGITS = re.compile(rb"[0-9]{20}")


def encode(value: Any) -> bytes:
    """`value` as compact UTF-8 JSON text: what a store holds for it."""
    try:
        return orjson.dumps(value)
    except TypeError:  # integers past 64 bits: the standard library writes them
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def store_for(ref: Ref, stores: Mapping[str, PayloadStore]) -> PayloadStore:
    """The store `ref` names; PayloadRefError saying which stores there are when none."""
    store = stores.get(ref.store)
    if store is not None:
        return store
    if not stores:
        raise PayloadRefError(f"{ref.uri}: no payload store is configured here")
    named = ", ".join(sorted(stores))
    raise PayloadRefError(f"{ref.uri}: no store named {ref.store!r} here (configured: {named})")


async def _values(refs: list[Ref], stores: Mapping[str, PayloadStore]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for ref in refs:
        if ref.uri in values:
            continue
        data = await store_for(ref, stores).get(ref)
        try:
            values[ref.uri] = _parsed(data)
        except ValueError:
            raise PayloadRefError(f"{ref.uri}: the stored bytes are not JSON") from None
    return values


def _parsed(data: bytes) -> Any:
    """`data` parsed as `json.loads` would, with orjson where it reads the text the same."""
    # orjson reads an integer past 64 bits as a float: 20 digits in a row may be one.
    if _LONG_DIGITS.search(data) is None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # the standard library is more lenient (NaN, lone surrogates), or says why
    return json.loads(data)


def _replaced(value: Any, values: Mapping[str, Any]) -> Any:
    if type(value) is dict:
        ref = as_ref(value)
        if ref is not None:
            return values[ref.uri]
        for key, item in value.items():
            value[key] = _replaced(item, values)
    elif type(value) is list:
        for index, item in enumerate(value):
            value[index] = _replaced(item, values)
    return value


async def resolve(
    body: dict[str, Any],
    stores: Mapping[str, PayloadStore],
    keys: Collection[str] | None = None,
) -> dict[str, Any]:
    """`body` with each reference in it (at any depth) replaced by the value it names; only
    under the top-level `keys` when given. Changes `body` in place, and returns it.

    Raises:
        PayloadRefError: A reference names no store here, or its value cannot be read, does
            not match its size and digest, or is not JSON.
    """
    scope = body if keys is None else {k: v for k, v in body.items() if k in keys}
    refs = list(refs_in(scope))
    if not refs:
        return body
    values = await _values(refs, stores)
    for key in scope:
        body[key] = _replaced(body[key], values)
    return body


async def offload(
    body: dict[str, Any],
    store: PayloadStore,
    job_id: str,
    threshold: int = DEFAULT_THRESHOLD,
    keep: Collection[str] = (),
    size: int | None = None,
) -> tuple[dict[str, Any], int]:
    """`body` with its largest top-level values stored in `store` for `job_id` and references
    in their place, until its JSON text is no larger than `threshold`; and how many it stored.

    A value of `MIN_STORED` bytes or less, one under a key in `keep` (a rule reads it) and a
    reference already are never stored. `size` is the body's encoded length, when known.
    """
    total = len(encode(body)) if size is None else size
    if total <= threshold:
        return body, 0
    encoded = {
        key: encode(value)
        for key, value in body.items()
        if key not in keep and as_ref(value) is None
    }
    out = dict(body)
    stored = 0
    for key in sorted(encoded, key=lambda k: len(encoded[k]), reverse=True):
        data = encoded[key]
        if total <= threshold or len(data) <= MIN_STORED:
            break
        ref = (await store.put(job_id, data)).to_json()
        out[key] = ref
        total -= len(data) - len(encode(ref))
        stored += 1
    return out, stored
