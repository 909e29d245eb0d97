"""The protocol rules: pure checks of what the kit observed, each with a stable name.

A check returns None when the rule holds, or the reason it does not; it raises NotCheckable
when the observation cannot tell (the rule is then SKIPped).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from payload_refs.refs import as_ref, refs_in
from workflow_manager.conformance.model import (
    AckOrderObservation,
    Batch,
    Exchange,
    FailureObservation,
    PayloadObservation,
    RedeliveryObservation,
    Reply,
    Status,
    Verdict,
    header_text,
)
from workflow_manager.conformance.requests import PAYLOAD_KEY

__all__ = ["Expect", "NotCheckable", "Rule", "RULES", "rule_named"]

CONTENT_TYPE = "application/json"
PAYLOAD_REF_ERROR = "PayloadRefError"  # the x-error-type of a reference that cannot be resolved


class NotCheckable(Exception):
    """The observation cannot tell whether the rule holds; the message says why."""


@dataclass(frozen=True)
class Expect:
    """What the kit may expect beyond the protocol: `echo` when the worker echoes its input."""

    echo: bool = False


@dataclass(frozen=True)
class Rule:
    """A named protocol rule: `probe` names the observation that `check` reads."""

    name: str
    title: str
    probe: str
    check: Callable[[Any, Expect], str | None]

    def evaluate(self, observation: object, expect: Expect) -> Verdict:
        """PASS (with the title), FAIL (with the reason) or SKIP (NotCheckable's reason)."""
        try:
            reason = self.check(observation, expect)
        except NotCheckable as exc:
            return Verdict(self.name, Status.SKIP, str(exc))
        if reason is None:
            return Verdict(self.name, Status.PASS, self.title)
        return Verdict(self.name, Status.FAIL, reason)


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _difference(expected: Mapping[str, Any], got: object) -> str:
    """The first difference between an echo worker's input and output, briefly."""
    if not isinstance(got, Mapping):
        return f"the output is {_short(got)}"
    missing = [key for key in expected if key not in got]
    if missing:
        return f"key {missing[0]!r} is missing from the output"
    extra = [key for key in got if key not in expected]
    if extra:
        return f"the output has an extra key {extra[0]!r}"
    key = next(key for key in expected if expected[key] != got[key])
    return f"key {key!r} is {_short(got[key])}, sent {_short(expected[key])}"


def _first(exchange: Exchange, what: str = "the request") -> Reply:
    if not exchange.replies:
        raise _Failed(f"no reply to {what} within {exchange.timeout_s:g}s")
    return exchange.replies[0]


class _Failed(Exception):
    """A check's early failure, caught by `_failing` and turned into its reason."""


def _failing(check: Callable[[Any, Expect], str | None]) -> Callable[[Any, Expect], str | None]:
    def run(observation: Any, expect: Expect) -> str | None:
        try:
            return check(observation, expect)
        except _Failed as exc:
            return str(exc)

    return run


def _answered(reply: Reply, sent_input: Mapping[str, Any], expect: Expect, what: str) -> None:
    """Fail unless `reply` is a success whose body is a JSON object (the input, with --echo)."""
    if reply.error is not None:
        hint = ""
        if header_text(reply.headers.get("x-error-type")) == PAYLOAD_REF_ERROR:
            hint = " (is the worker given the kit's store? WM_PAYLOAD_STORES=NAME=URL)"
        raise _Failed(f"the worker answered {what} with x-error {_short(reply.error, 200)}{hint}")
    output, problem = reply.output()
    if problem is not None:
        raise _Failed(problem)
    if not isinstance(output, dict):
        raise _Failed(f"the body is a JSON {type(output).__name__}, not an object")
    if expect.echo:
        _echoed(reply, output, sent_input)


def _echoed(reply: Reply, output: dict[str, Any], sent_input: Mapping[str, Any]) -> None:
    """Fail unless the reply's body, its references read back, is `sent_input`."""
    if reply.unresolved is not None:
        raise _Failed(
            f"a reference in the reply cannot be read from the kit's store: {reply.unresolved}"
        )
    got = output if reply.resolved is None else reply.resolved
    if got != sent_input:
        hint = ""
        if reply.resolved is None and next(refs_in(output), None) is not None:
            hint = " (the reply holds references: give the kit the worker's store, --payload-store)"
        raise _Failed(f"the output is not the input (--echo): {_difference(sent_input, got)}{hint}")


@_failing
def _reply_to(exchange: Exchange, _expect: Expect) -> str | None:
    if not exchange.replies:
        return (
            f"no reply on the request's reply_to queue within {exchange.timeout_s:g}s "
            "(publish the reply on the default exchange with routing key = reply_to)"
        )
    got, wanted = exchange.replies[0].correlation_id, exchange.sent.correlation_id
    if got is None:
        return f"the reply has no correlation_id; expected the request's {wanted!r}"
    if got != wanted:
        return f"the reply's correlation_id is {got!r}; expected the request's {wanted!r}"
    return None


@_failing
def _json_reply(exchange: Exchange, expect: Expect) -> str | None:
    reply = _first(exchange)
    if reply.content_type != CONTENT_TYPE:
        return f"content_type is {reply.content_type!r}; expected {CONTENT_TYPE!r}"
    _answered(reply, exchange.sent.input, expect, "--input")
    return None


@_failing
def _attempt_echo(exchange: Exchange, _expect: Expect) -> str | None:
    reply = _first(exchange)
    value = reply.headers.get("x-attempt")
    wanted = exchange.sent.attempt
    if value is None:
        return f"the reply has no x-attempt header; expected {wanted}, the request's"
    text = header_text(value)
    if isinstance(value, bool) or text is None or not text.strip().isdigit() or int(text) != wanted:
        return f"x-attempt is {value!r}; expected {wanted}, the request's"
    return None


def _answers(what: str) -> Callable[[Exchange, Expect], str | None]:
    @_failing
    def check(exchange: Exchange, expect: Expect) -> str | None:
        _answered(_first(exchange, what), exchange.sent.input, expect, what)
        return None

    return check


@_failing
def _concurrency(batch: Batch, expect: Expect) -> str | None:
    sent = {request.correlation_id: request for request in batch.sent}
    nameless = sum(reply.correlation_id is None for reply in batch.replies)
    if nameless:
        return f"{nameless} of {len(batch.replies)} replies have no correlation_id"
    counts = Counter(reply.correlation_id for reply in batch.replies)
    strangers = [cid for cid in counts if cid not in sent]
    if strangers:
        return f"{len(strangers)} replies carry a correlation_id no request had: {strangers[0]!r}"
    twice = [cid for cid, count in counts.items() if count > 1]
    if twice:
        return f"{len(twice)} request(s) answered more than once, e.g. {twice[0]!r}"
    if len(counts) < len(sent):
        return f"{len(counts)} of {len(sent)} requests answered within {batch.timeout_s:g}s"
    for reply in batch.replies:
        request = sent[reply.correlation_id or ""]
        _answered(reply, request.input, expect, f"request {request.correlation_id}")
    return None


@_failing
def _redelivery(observation: RedeliveryObservation, _expect: Expect) -> str | None:
    _first(observation.first, "the first copy")
    wanted = observation.first.sent.correlation_id
    if not observation.redelivered:
        raise NotCheckable(
            "the kit could not take the copy back to requeue it (a consumer of higher "
            "priority than the kit's took it?)"
        )
    if not observation.again:
        return (
            "the redelivered copy (same message_id, redelivered flag set) got no reply within "
            f"{observation.first.timeout_s:g}s: answer it again, do not drop it as a duplicate"
        )
    if observation.again[0].correlation_id != wanted:
        return (
            f"the reply to the redelivered copy has correlation_id "
            f"{observation.again[0].correlation_id!r}; expected {wanted!r}"
        )
    return None


_REQUEUED = "the request came back to the queue: the worker requeued it (nack/reject requeue)"


@_failing
def _error_reply(observation: FailureObservation, _expect: Expect) -> str | None:
    exchange = observation.exchange
    if not exchange.replies:
        where = f"; {_REQUEUED} instead of replying" if observation.requeued else ""
        return f"no reply to --failing-input within {exchange.timeout_s:g}s{where}"
    reply = exchange.replies[0]
    if not reply.error:
        return (
            "the reply to --failing-input has no x-error header (report a failure with "
            "x-error; or does this input not make the worker fail?)"
        )
    if observation.requeued or len(exchange.replies) > 1:
        return f"replied with x-error, but {_REQUEUED}; ack it: retries are the manager's call"
    return None


def _ack_after_reply(observation: AckOrderObservation, _expect: Expect) -> str | None:
    if observation.replies:
        return None
    if not observation.refused:
        return (
            f"no reply reached reply_to within {observation.timeout_s:g}s, so the order of "
            "reply and ack could not be seen"
        )
    return (
        "the request was lost when the broker refused its reply (basic.nack): the worker acked "
        "it before the reply was confirmed (or left it unacked)"
    )


def _sent_uri(exchange: Exchange) -> str:
    """The `wm://` URI of the reference the kit sent under PAYLOAD_KEY."""
    ref = as_ref(exchange.sent.input.get(PAYLOAD_KEY))
    return "" if ref is None else ref.uri


@_failing
def _payload_ref(observation: PayloadObservation, expect: Expect) -> str | None:
    exchange = observation.exchange
    what = "the request holding a reference"
    reply = _first(exchange, what)
    _answered(reply, exchange.sent.input, Expect(echo=False), what)
    if not expect.echo:
        return None
    uri = _sent_uri(exchange)
    if any(ref.uri == uri for ref in refs_in(reply.output()[0])):
        return (
            f"the reply hands back the reference the kit sent ({uri}): the handler was given "
            "the reference object, not the value (resolve every reference before the handler)"
        )
    expected = {**exchange.sent.input, PAYLOAD_KEY: observation.value}
    _echoed(reply, reply.output()[0], expected)
    return None


@_failing
def _payload_ref_missing(observation: FailureObservation, _expect: Expect) -> str | None:
    exchange = observation.exchange
    uri = _sent_uri(exchange)
    if not exchange.replies:
        where = f"; {_REQUEUED} instead of replying" if observation.requeued else ""
        return (
            "no reply to the request whose reference names nothing within "
            f"{exchange.timeout_s:g}s{where}"
        )
    reply = exchange.replies[0]
    if not reply.error:
        return (
            f"the reply to a request whose reference ({uri}) names nothing in the store has no "
            "x-error header: resolve references before the handler runs, and fail when one cannot"
        )
    error_type = header_text(reply.headers.get("x-error-type"))
    if error_type != PAYLOAD_REF_ERROR:
        return (
            f"x-error-type is {error_type!r}; expected {PAYLOAD_REF_ERROR!r} "
            f"(x-error {_short(reply.error, 120)})"
        )
    if uri not in reply.error:
        return f"x-error {_short(reply.error, 200)} does not name the reference {uri}"
    if observation.requeued or len(exchange.replies) > 1:
        return f"replied with x-error, but {_REQUEUED}; ack it: retries are the manager's call"
    return None


RULES: tuple[Rule, ...] = (
    Rule("reply-to", "the reply goes to reply_to with the request's correlation_id", "basic",
         _reply_to),
    Rule("json-reply", "the reply body is a JSON object, content_type application/json",
         "basic", _json_reply),
    Rule("attempt-echo", "the reply echoes the request's x-attempt", "basic", _attempt_echo),
    Rule("unknown-headers", "a request with unknown headers is answered normally",
         "unknown-headers", _answers("the request with unknown headers")),
    Rule("unicode", "non-ASCII text in keys and values is answered (unchanged, with --echo)",
         "unicode", _answers("the non-ASCII input")),
    Rule("large-input", "a 1 MiB input is answered (unchanged, with --echo)", "large-input",
         _answers("the 1 MiB input")),
    Rule("concurrency", "50 concurrent requests are each answered once, with their ids",
         "concurrency", _concurrency),
    Rule("redelivery", "a redelivered request (same message_id) is answered again",
         "redelivery", _redelivery),
    Rule("error-reply", "a failing input gets an x-error reply and is acked, not requeued",
         "failure", _error_reply),
    Rule("ack-after-reply", "the request is acked only after the broker confirmed the reply",
         "ack-order", _ack_after_reply),
    Rule("payload-ref", "a reference in the input is resolved before the handler sees it",
         "payload-ref", _payload_ref),
    Rule("payload-ref-missing", "a reference to a missing value gets a PayloadRefError reply, "
         "acked", "payload-ref-missing", _payload_ref_missing),
)  # fmt: skip


def rule_named(name: str) -> Rule:
    """The rule called `name`; KeyError names the known ones."""
    for rule in RULES:
        if rule.name == name:
            return rule
    raise KeyError(f"no rule {name!r} (known: {', '.join(rule.name for rule in RULES)})")
