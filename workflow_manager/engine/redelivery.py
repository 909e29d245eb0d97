"""Telling a redelivered reply from a new one. Pure.

RabbitMQ delivers a message again, marked `redelivered`, when the consumer that had it did not
ack it: the manager may have been killed after journaling a reply's effect and before its ack
left. A worker that does not echo `x-attempt` sends the same bytes for each failed attempt, so
the attempt alone cannot tell that copy from the next attempt's failure. The engine therefore
keeps, for each step, a digest of the last reply that failed one of its attempts (replay
rebuilds it from the journaled replies), and takes a *redelivered* reply with that digest for
the same message again: ignored, and acked. A reply that is not redelivered always counts: a
worker failing twice with the same error has failed twice.

What this cannot tell apart: the next attempt's failure, identical to the last one, delivered
and then lost with the manager before it was journaled. It is taken for the copy, and the
step waits for its timeout (or a retry). Workers that echo `x-attempt` never meet this.
"""

from __future__ import annotations

import hashlib

from workflow_manager.engine.events import StepReplied

__all__ = ["reply_digest", "is_repeat"]

_DIGEST_BYTES = 16


def reply_digest(event: StepReplied) -> bytes:
    """A digest of everything a reply carries that decides its effect: body and headers."""
    digest = hashlib.blake2b(digest_size=_DIGEST_BYTES)
    for part in (event.body, _text(event.error), _text(event.meta_patch), _text(event.attempt)):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.digest()


def is_repeat(event: StepReplied, counted: bytes | None) -> bool:
    """True when `event` is a redelivered copy of the reply whose digest is `counted`."""
    return event.redelivered and counted is not None and reply_digest(event) == counted


def _text(value: str | int | None) -> bytes:
    # None and "" must differ: a leading marker says which one it was.
    if value is None:
        return b"-"
    return b"+" + str(value).encode("utf-8", "surrogatepass")
