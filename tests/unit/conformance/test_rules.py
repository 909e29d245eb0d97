"""Each rule judged on recorded observations: what passes, what fails and with which reason."""

from __future__ import annotations

import json

import pytest

from payload_refs import Ref
from workflow_manager.conformance.model import (
    AckOrderObservation,
    Batch,
    Exchange,
    FailureObservation,
    PayloadObservation,
    RedeliveryObservation,
    Reply,
    Status,
)
from workflow_manager.conformance.requests import PAYLOAD_KEY, build_request, with_reference
from workflow_manager.conformance.rules import RULES, Expect, rule_named

JOB = "3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93"
SENT = build_request(JOB, "echo", {"text": "hi", "n": 1}, attempt=2)
CID = SENT.correlation_id


def reply(
    body: object = None,
    *,
    cid: str | None = CID,
    ctype: str | None = "application/json",
    **headers: object,
) -> Reply:
    """A reply as the kit records it; `body` None means the request's input echoed."""
    raw = (
        body
        if isinstance(body, bytes)
        else json.dumps(SENT.input if body is None else body).encode()
    )
    return Reply(cid, ctype, {"x-attempt": 2, **headers}, raw)  # fmt: skip


def exchange(*replies: Reply) -> Exchange:
    return Exchange(SENT, replies, timeout_s=2.0)


def judge(name: str, observation: object, echo: bool = False) -> tuple[Status, str]:
    verdict = rule_named(name).evaluate(observation, Expect(echo=echo))
    return verdict.status, verdict.reason


BASIC_CASES = [
    # rule, replies, echo, status, part of the reason
    ("reply-to", [reply()], False, Status.PASS, "reply_to"),
    ("reply-to", [], False, Status.FAIL, "no reply on the request's reply_to queue within 2s"),
    ("reply-to", [reply(cid=None)], False, Status.FAIL, "has no correlation_id"),
    ("reply-to", [reply(cid=f"{JOB}:other")], False, Status.FAIL, f"is '{JOB}:other'"),
    ("json-reply", [reply()], True, Status.PASS, "JSON object"),
    ("json-reply", [reply(b"")], False, Status.PASS, "JSON object"),  # empty counts as {}
    (
        "json-reply",
        [
            reply(
                b"",
            )
        ],
        True,
        Status.FAIL,
        "key 'text' is missing",
    ),
    ("json-reply", [reply(ctype="text/plain")], False, Status.FAIL, "content_type is 'text/plain'"),
    ("json-reply", [reply(ctype=None)], False, Status.FAIL, "content_type is None"),
    ("json-reply", [reply([1, 2])], False, Status.FAIL, "a JSON list, not an object"),
    ("json-reply", [reply(b"{nope")], False, Status.FAIL, "not valid JSON"),
    ("json-reply", [reply(b"\xff{}")], False, Status.FAIL, "not UTF-8"),
    ("json-reply", [reply(**{"x-error": "boom"})], False, Status.FAIL, "with x-error 'boom'"),
    ("json-reply", [reply({"text": "hi", "n": 2})], True, Status.FAIL, "key 'n' is 2, sent 1"),
    ("json-reply", [reply({"text": "hi", "n": 1, "x": 0})], True, Status.FAIL, "extra key 'x'"),
    ("json-reply", [reply({"text": "hi", "n": 2})], False, Status.PASS, "JSON object"),
    ("json-reply", [], False, Status.FAIL, "no reply to the request within 2s"),
    ("attempt-echo", [reply()], False, Status.PASS, "x-attempt"),
    ("attempt-echo", [reply(**{"x-attempt": "2"})], False, Status.PASS, "x-attempt"),
    ("attempt-echo", [reply(**{"x-attempt": b"2"})], False, Status.PASS, "x-attempt"),
    ("attempt-echo", [reply(**{"x-attempt": 1})], False, Status.FAIL, "x-attempt is 1; expected 2"),
    ("attempt-echo", [reply(**{"x-attempt": True})], False, Status.FAIL, "x-attempt is True"),
    ("attempt-echo", [reply(**{"x-attempt": None})], False, Status.FAIL, "no x-attempt header"),
    ("unknown-headers", [reply()], True, Status.PASS, "answered normally"),
    ("unknown-headers", [reply(**{"x-error": "bad header"})], True, Status.FAIL, "'bad header'"),
    ("unicode", [reply({"text": "h?", "n": 1})], True, Status.FAIL, "key 'text' is 'h?'"),
    ("large-input", [], True, Status.FAIL, "no reply to the 1 MiB input within 2s"),
]


@pytest.mark.parametrize(("name", "replies", "echo", "status", "reason"), BASIC_CASES)
def test_single_reply_rules(name, replies, echo, status, reason):
    got_status, got_reason = judge(name, exchange(*replies), echo)
    assert (got_status, reason in got_reason) == (status, True), got_reason


def batch_of(count: int) -> tuple:
    sent = tuple(build_request(f"{JOB[:-2]}{i:02d}", "echo", {"i": i}) for i in range(count))
    return sent, [Reply(s.correlation_id, "application/json", {}, s.body) for s in sent]


def test_concurrency_passes_when_each_request_is_answered_once_with_its_own_output():
    sent, replies = batch_of(5)
    assert judge("concurrency", Batch(sent, tuple(reversed(replies)), 2.0), True)[0] is Status.PASS


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda r: r[:-1], "4 of 5 requests answered within 2s"),
        (lambda r: [*r[:-1], r[0]], "answered more than once"),
        (lambda r: [Reply(None, x.content_type, {}, x.body) for x in r], "5 of 5 replies have no"),
        (lambda r: [*r[:-1], Reply("x:y", "application/json", {}, b"{}")], "no request had: 'x:y'"),
        (lambda r: [Reply(x.correlation_id, x.content_type, {}, r[0].body) for x in r],
         "the output is not the input"),
    ],
)  # fmt: skip
def test_concurrency_fails_on_missing_duplicate_stray_or_crossed_replies(change, reason):
    sent, replies = batch_of(5)
    status, got = judge("concurrency", Batch(sent, tuple(change(replies)), 2.0), True)
    assert status is Status.FAIL and reason in got, got


@pytest.mark.parametrize(
    ("first", "redelivered", "again", "status", "reason"),
    [
        ([reply()], True, [reply()], Status.PASS, "answered again"),
        ([reply()], True, [], Status.FAIL, "got no reply within 2s: answer it again"),
        ([reply()], True, [reply(cid=None)], Status.FAIL, "has correlation_id None"),
        ([reply()], False, [reply()], Status.SKIP, "could not take the copy back"),
        ([], False, [], Status.FAIL, "no reply to the first copy"),
    ],
)
def test_redelivery(first, redelivered, again, status, reason):
    observation = RedeliveryObservation(exchange(*first), redelivered, tuple(again))
    got_status, got_reason = judge("redelivery", observation)
    assert got_status is status and reason in got_reason, got_reason


@pytest.mark.parametrize(
    ("replies", "requeued", "status", "reason"),
    [
        ([reply(**{"x-error": "asked to fail"})], False, Status.PASS, "x-error reply"),
        ([reply(**{"x-error": b"asked to fail"})], False, Status.PASS, "x-error reply"),
        ([], True, Status.FAIL, "within 2s; the request came back to the queue"),
        ([], False, Status.FAIL, "no reply to --failing-input within 2s"),
        ([reply()], False, Status.FAIL, "has no x-error header"),
        ([reply(**{"x-error": ""})], False, Status.FAIL, "has no x-error header"),
        ([reply(**{"x-error": "e"})], True, Status.FAIL, "but the request came back"),
        ([reply(**{"x-error": "e"})] * 2, False, Status.FAIL, "but the request came back"),
    ],
)
def test_error_reply(replies, requeued, status, reason):
    observation = FailureObservation(exchange(*replies), requeued)
    got_status, got_reason = judge("error-reply", observation)
    assert got_status is status and reason in got_reason, got_reason


@pytest.mark.parametrize(
    ("refused", "replies", "status", "reason"),
    [
        ([reply()], [reply()], Status.PASS, "only after the broker confirmed"),
        ([reply()], [], Status.FAIL, "the request was lost when the broker refused its reply"),
        ([], [], Status.FAIL, "no reply reached reply_to within 2s"),
    ],
)
def test_ack_after_reply(refused, replies, status, reason):
    observation = AckOrderObservation(SENT, tuple(refused), tuple(replies), 2.0)
    got_status, got_reason = judge("ack-after-reply", observation)
    assert got_status is status and reason in got_reason, got_reason


def test_rule_names_are_stable_and_unique():
    names = [rule.name for rule in RULES]
    assert names == [
        "reply-to", "json-reply", "attempt-echo", "unknown-headers", "unicode", "large-input",
        "concurrency", "redelivery", "error-reply", "ack-after-reply", "payload-ref",
        "payload-ref-missing",
    ]  # fmt: skip
    with pytest.raises(KeyError, match="no rule 'nope' \\(known: reply-to, json-reply"):
        rule_named("nope")


DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
VALUE_JOB = "0b1c2d3e-8b1d-4e0f-9a6b-2c7d5e1f0a93"
SENT_REF = Ref("main", f"{VALUE_JOB}/{DIGEST}", DIGEST, 307200)
URI = SENT_REF.uri
REF_SENT = build_request(JOB, "echo", with_reference({"text": "hi"}, SENT_REF.to_json()))
VALUE = "a stored value"
ECHOED = {"text": "hi", PAYLOAD_KEY: VALUE}  # the input with the value in place of the reference
WORKERS_REF = Ref("main", f"{JOB}/{DIGEST}", DIGEST, 307200).to_json()  # the reply's own


def ref_reply(body: object, resolved: object = None, unresolved: str | None = None, **headers):
    """A reply to REF_SENT; `resolved`/`unresolved` as the kit's read-back left them."""
    raw = json.dumps(body).encode()
    return Reply(REF_SENT.correlation_id, "application/json", headers, raw, resolved, unresolved)


def payload(*replies: Reply) -> PayloadObservation:
    return PayloadObservation(Exchange(REF_SENT, replies, 2.0), VALUE)


OWN_REF = {"text": "hi", PAYLOAD_KEY: WORKERS_REF}  # an echo whose value the worker stored


@pytest.mark.parametrize(
    ("observation", "echo", "status", "reason"),
    [
        # A worker with a store replies with a reference of its own; the kit read it back.
        (payload(ref_reply(OWN_REF, ECHOED)), True, Status.PASS, "resolved before the handler"),
        (payload(ref_reply(ECHOED)), True, Status.PASS, "resolved"),  # replied inline
        (payload(ref_reply({"words": 2})), False, Status.PASS, "resolved"),
        (payload(ref_reply(REF_SENT.input)), False, Status.PASS, "resolved"),
        (payload(ref_reply(REF_SENT.input, ECHOED)), True, Status.FAIL,
         f"hands back the reference the kit sent ({URI}): the handler was given the reference"),
        (payload(ref_reply(OWN_REF, None, f"{WORKERS_REF['$ref']}: not found in file:///s")),
         True, Status.FAIL, "cannot be read from the kit's store: wm://main/3f2a"),
        (payload(ref_reply({"text": "hi", PAYLOAD_KEY: "x"})), True, Status.FAIL,
         "is not the input (--echo): key 'conformance_payload' is 'x'"),
        (payload(ref_reply(OWN_REF, {"text": "hi", PAYLOAD_KEY: "x"})), True, Status.FAIL,
         "key 'conformance_payload' is 'x', sent 'a stored value'"),
        (payload(ref_reply(OWN_REF)), True, Status.FAIL,  # the kit could not read it back
         "(the reply holds references: give the kit the worker's store, --payload-store)"),
        (payload(ref_reply({}, **{"x-error": f"PayloadRefError: {URI}: no payload store",
                                  "x-error-type": "PayloadRefError"})), False, Status.FAIL,
         "x-error 'PayloadRefError: wm://main/0b1c"),
        (payload(ref_reply({}, **{"x-error": "e", "x-error-type": "PayloadRefError"})), False,
         Status.FAIL, "(is the worker given the kit's store? WM_PAYLOAD_STORES=NAME=URL)"),
        (payload(ref_reply([1])), False, Status.FAIL, "a JSON list, not an object"),
        (payload(), True, Status.FAIL, "no reply to the request holding a reference within 2s"),
    ],
)  # fmt: skip
def test_payload_ref(observation, echo, status, reason):
    got_status, got_reason = judge("payload-ref", observation, echo)
    assert got_status is status and reason in got_reason, got_reason


def test_every_echo_check_compares_the_reply_with_its_references_read_back():
    stored = {"text": "hi", "n": {"$ref": URI, "sha256": DIGEST, "size": 1}}
    read_back = Reply(CID, "application/json", {"x-attempt": 2}, json.dumps(stored).encode(),
                      dict(SENT.input))  # fmt: skip
    assert judge("large-input", exchange(read_back), echo=True)[0] is Status.PASS
    unreadable = Reply(CID, "application/json", {}, read_back.body, None, "gone")
    assert (
        "cannot be read from the kit's store: gone"
        in judge("unicode", exchange(unreadable), True)[1]
    )


REF_ERROR = {"x-error": f"PayloadRefError: {URI}: not found in file:///s",
             "x-error-type": "PayloadRefError"}  # fmt: skip


@pytest.mark.parametrize(
    ("replies", "requeued", "status", "reason"),
    [
        ([ref_reply({}, **REF_ERROR)], False, Status.PASS, "PayloadRefError reply, acked"),
        ([ref_reply({}, **{**REF_ERROR, "x-error-type": b"PayloadRefError"})], False,
         Status.PASS, "PayloadRefError"),
        ([ref_reply(REF_SENT.input)], False, Status.FAIL,
         f"reference ({URI}) names nothing in the store has no x-error header"),
        ([ref_reply({}, **{**REF_ERROR, "x-error-type": "KeyError"})], False, Status.FAIL,
         "x-error-type is 'KeyError'; expected 'PayloadRefError'"),
        ([ref_reply({}, **{"x-error": "PayloadRefError: not found"})], False, Status.FAIL,
         "x-error-type is None"),
        ([ref_reply({}, **{**REF_ERROR, "x-error": "PayloadRefError: not found"})], False,
         Status.FAIL, f"does not name the reference {URI}"),
        ([ref_reply({}, **REF_ERROR)], True, Status.FAIL, "but the request came back"),
        ([ref_reply({}, **REF_ERROR)] * 2, False, Status.FAIL, "but the request came back"),
        ([], True, Status.FAIL, "within 2s; the request came back to the queue"),
        ([], False, Status.FAIL, "no reply to the request whose reference names nothing"),
    ],
)  # fmt: skip
def test_payload_ref_missing(replies, requeued, status, reason):
    observation = FailureObservation(Exchange(REF_SENT, tuple(replies), 2.0), requeued)
    got_status, got_reason = judge("payload-ref-missing", observation)
    assert got_status is status and reason in got_reason, got_reason
