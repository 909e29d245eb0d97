"""The reference format: `{"$ref": "wm://<store>/<key>", "sha256": <hex>, "size": <bytes>}`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "REFS_HEADER", "REF_MEMBER", "Ref", "as_ref", "count_ref_keys", "ref_count", "refs_in",
    "valid_digest", "valid_key",
]  # fmt: skip

REFS_HEADER = "x-payload-refs"  # on a message whose body holds references: how many `$ref`s
SCHEME = "wm://"
_MEMBERS = frozenset(("$ref", "sha256", "size"))
_STORE = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
_SEGMENT = re.compile(r"[A-Za-z0-9._-]+")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_MAX_KEY = 512
REF_MEMBER = b'"$ref":'  # a member named $ref, as JSON encodes it (in text it would be \"$ref\")


def valid_store_name(name: str) -> bool:
    """True for a store name the protocol allows: `[a-z0-9][a-z0-9_-]*`, at most 63."""
    return _STORE.fullmatch(name) is not None


def valid_digest(text: str) -> bool:
    """True for a SHA-256 as references write it: 64 lowercase hex digits."""
    return _SHA256.fullmatch(text) is not None


def valid_key(key: str) -> bool:
    """True for a key the protocol allows: `/`-joined segments of `[A-Za-z0-9._-]`, none `.`
    or `..` (a file store maps it to a path), at most 512 characters."""
    if not key or len(key) > _MAX_KEY:
        return False
    return all(
        _SEGMENT.fullmatch(part) is not None and part not in (".", "..") for part in key.split("/")
    )


@dataclass(frozen=True, slots=True)
class Ref:
    """A reference to `size` bytes of JSON text, with SHA-256 `sha256`, under `key` in `store`."""

    store: str
    key: str
    sha256: str
    size: int

    @property
    def uri(self) -> str:
        """`wm://<store>/<key>`: what the message carries, and what errors name."""
        return f"{SCHEME}{self.store}/{self.key}"

    @property
    def job_id(self) -> str:
        """The key's first segment: the job the value was stored for."""
        return self.key.split("/", 1)[0]

    def to_json(self) -> dict[str, Any]:
        """The reference object, as a message carries it."""
        return {"$ref": self.uri, "sha256": self.sha256, "size": self.size}


def as_ref(value: Any) -> Ref | None:
    """The reference `value` is, or None when it is not exactly a reference object.

    An object with the three members whose `$ref` starts `wm://` but is otherwise malformed is
    still taken as one (a reference that cannot resolve fails loudly rather than passing on as
    data): its `Ref` has the raw text as its key and fails every check of `valid_key`.
    """
    if type(value) is not dict or len(value) != 3 or value.keys() != _MEMBERS:
        return None
    uri = value["$ref"]
    if not isinstance(uri, str) or not uri.startswith(SCHEME):
        return None
    store, _, key = uri[len(SCHEME) :].partition("/")
    digest, size = value["sha256"], value["size"]
    return Ref(
        store=store,
        key=key,
        sha256=digest if isinstance(digest, str) else "",
        size=size if type(size) is int else -1,
    )


def problem(ref: Ref) -> str | None:
    """What is malformed in `ref` (store name, key, digest, size), or None."""
    if not valid_store_name(ref.store):
        return "the store name must match [a-z0-9][a-z0-9_-]* (at most 63 characters)"
    if not valid_key(ref.key):
        return "the key must be /-separated segments of [A-Za-z0-9._-], none '.' or '..'"
    if not valid_digest(ref.sha256):
        return "sha256 must be 64 lowercase hex digits"
    if ref.size < 0:
        return "size must be a whole number of bytes, 0 or more"
    return None


def refs_in(value: Any) -> Iterator[Ref]:
    """Every reference in `value`, at any depth, in document order."""
    if type(value) is dict:
        ref = as_ref(value)
        if ref is not None:
            yield ref
            return
        for item in value.values():
            yield from refs_in(item)
    elif type(value) is list:
        for item in value:
            yield from refs_in(item)


def count_ref_keys(body: bytes) -> int:
    """How many `$ref` members the JSON text `body` has: the `x-payload-refs` header's value.

    A byte count, not a parse: cheap enough for every message. It counts a `$ref` member that
    is not part of a reference too (a JSON Schema's, say); the header only says to look.
    """
    return body.count(REF_MEMBER)


def ref_count(headers: Any) -> int:
    """The `x-payload-refs` header of a message's headers as a count (0: absent or not one)."""
    if not headers:
        return 0
    value = headers.get(REFS_HEADER)
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    if isinstance(value, str):
        value = int(value) if value.isdigit() else 0
    return value if type(value) is int and value > 0 else 0
