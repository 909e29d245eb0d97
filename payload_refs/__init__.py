"""Payloads by reference (docs/protocol.md, "Payloads by reference"): large values stored once
in a payload store and sent as `{"$ref": "wm://<store>/<key>", "sha256": ..., "size": ...}`.

`refs` holds the reference format, `stores` the stores (a shared directory, in memory),
`pgstore` the PostgreSQL one, and `resolving` the two moves every party makes: resolve the
references in a message, and store a large message's top-level values.
"""

from payload_refs.errors import PayloadRefError
from payload_refs.refs import REFS_HEADER, Ref, as_ref, count_ref_keys, ref_count
from payload_refs.resolving import DEFAULT_THRESHOLD, MIN_STORED, offload, resolve
from payload_refs.stores import (
    FileStore,
    MemoryStore,
    PayloadStore,
    StoreSpec,
    open_store,
    parse_store,
    parse_stores,
)

__all__ = [
    "DEFAULT_THRESHOLD",
    "MIN_STORED",
    "REFS_HEADER",
    "FileStore",
    "MemoryStore",
    "PayloadRefError",
    "PayloadStore",
    "Ref",
    "StoreSpec",
    "as_ref",
    "count_ref_keys",
    "offload",
    "open_store",
    "parse_store",
    "parse_stores",
    "ref_count",
    "resolve",
]
