"""The probes for payloads by reference (docs/protocol.md, "Payloads by reference").

Each sends a request whose input holds a reference under `conformance_payload`, with the
`x-payload-refs` header, in the store the kit shares with the worker (--payload-store):
`payload_ref` to a value the kit stored, `payload_ref_missing` to a key that holds nothing.

The kit stores its value for a job id of its own, not the request's (as a fan-out's child
receives its parent's references). A worker that resolves the reference and stores its large
reply writes under the request's job, so an echo that hands back the kit's own reference shows
a handler that was given the reference, not the value. The session reads back the references in
replies, and removes what was stored for the kit's jobs when the run ends.
"""

from __future__ import annotations

import hashlib

from payload_refs import REFS_HEADER, PayloadStore, Ref, count_ref_keys
from payload_refs.errors import PayloadRefError
from payload_refs.resolving import encode
from workflow_manager.conformance.model import FailureObservation, PayloadObservation, SentRequest
from workflow_manager.conformance.probes import exchange_of, failed_exchange
from workflow_manager.conformance.requests import (
    PAYLOAD_BYTES,
    encode_input,
    payload_value,
    with_reference,
)
from workflow_manager.conformance.session import Session
from workflow_manager.conformance.settings import StoreUnavailable

__all__ = ["payload_ref", "payload_ref_missing"]


def _store(session: Session) -> PayloadStore:
    if session.store is None:  # the runner skips these probes without a store
        raise StoreUnavailable("no --payload-store given")
    return session.store


def _request(session: Session, ref: Ref) -> SentRequest:
    data = with_reference(session.settings.input, ref.to_json())
    headers = {REFS_HEADER: count_ref_keys(encode_input(data))}
    return session.request(data, extra_headers=headers)


async def payload_ref(session: Session) -> PayloadObservation:
    """A request whose input holds a reference to a 300 KiB value the kit stored."""
    store = _store(session)
    value_job = session.new_id()
    value = payload_value(value_job)
    try:
        ref = await store.put(value_job, encode(value))
    except PayloadRefError as exc:
        raise StoreUnavailable(
            f"the kit cannot store its value in --payload-store {store.name}={store.where}: {exc}"
        ) from None
    exchange = await exchange_of(session, "payload-ref", _request(session, ref))
    return PayloadObservation(exchange, value)


async def payload_ref_missing(session: Session) -> FailureObservation:
    """A request whose reference is well formed but names a key with no value in the store;
    then, as for a failing input, whether the request comes back to the queue."""
    store = _store(session)
    value_job = session.new_id()
    digest = hashlib.sha256(value_job.encode()).hexdigest()  # of bytes no one stored
    request = _request(session, Ref(store.name, f"{value_job}/{digest}", digest, PAYLOAD_BYTES))
    return await failed_exchange(session, "payload-ref-missing", request)
