"""Webhook signatures (GitHub's, Stripe's, ours), secrets from the environment, matching. Pure."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.config.webhooks import Webhook
from workflow_manager.webhooks import (
    Refused,
    Secret,
    Source,
    Verified,
    WebhookConfigError,
    matching_jobs,
    resolve_secrets,
    sign,
    verify,
    webhook_job_id,
)

NOW = 1_700_000_000.0
SECRET = "s3cr3t-for-tests"


def source(kind: str, secret: str = SECRET, tolerance_s: float = 300.0) -> Source:
    extra = {} if kind == "github" else {"tolerance_s": tolerance_s}
    hook = Webhook(name=f"{kind}-hook", secret_env="HOOK_SECRET", signature=kind, **extra)
    return Source(hook, Secret(secret))


def lower(headers: dict[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


def hex_hmac(secret: str, message: bytes) -> str:
    """Computed here with the standard library, independently of the module under test."""
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


# -- GitHub ------------------------------------------------------------------------------------


def test_githubs_documented_example_verifies():
    # docs.github.com, "Validating webhook deliveries": secret, payload and signature.
    hook = source("github", secret="It's a Secret to Everybody")
    signature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    headers = {"x-hub-signature-256": signature, "x-github-delivery": "72d3162e-cc78-11e3"}
    assert verify(hook, headers, b"Hello, World!", NOW) == Verified("72d3162e-cc78-11e3")


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({}, "not signed: no X-Hub-Signature-256 header"),
        ({"x-hub-signature-256": "sha256=" + "0" * 64}, "does not match"),
        ({"x-hub-signature-256": "sha256=757107ea"}, "does not match"),  # cut short
        ({"x-hub-signature-256": "sha256=é"}, "does not match"),  # not even hex
    ],
)
def test_github_bad_or_missing_signature_is_401(headers, why):
    verdict = verify(source("github", "It's a Secret to Everybody"), headers, b"Hello, World!", 0)
    assert isinstance(verdict, Refused)
    assert (verdict.status, verdict.outcome) == (401, "bad_signature")
    assert why in verdict.reason


def test_github_signature_of_another_body_is_refused():
    hook = source("github", "It's a Secret to Everybody")
    signature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    verdict = verify(hook, {"x-hub-signature-256": signature}, b"Hello, World?", NOW)
    assert isinstance(verdict, Refused) and verdict.outcome == "bad_signature"


def test_github_has_no_timestamp_so_an_old_request_still_verifies():
    body = b'{"action": "opened"}'
    headers = lower(sign(source("github").webhook, SECRET, body, 0))
    assert isinstance(verify(source("github"), headers, body, NOW + 10**6), Verified)


def test_github_without_a_delivery_id_is_named_by_its_body():
    body = b'{"action": "opened"}'
    headers = lower(sign(source("github").webhook, SECRET, body, NOW))
    first, again = (verify(source("github"), headers, body, NOW) for _ in range(2))
    assert isinstance(first, Verified) and first == again
    assert first.delivery == "sha256:" + hashlib.sha256(body).hexdigest()


def test_github_tolerance_is_refused_in_the_config():
    with pytest.raises(ValueError, match="GitHub signs no timestamp"):
        Webhook(name="gh", secret_env="S", signature="github", tolerance_s=60)


# -- Stripe ------------------------------------------------------------------------------------

STRIPE_SECRET = "whsec_test_secret"
STRIPE_BODY = b'{"id": "evt_1NG8Du2eZvKYlo2CUI79vXWy", "type": "invoice.paid"}'


def stripe_header(t: int, *signatures: str) -> dict[str, str]:
    # The documented shape: "t=1492774577,v1=5257a8...,v0=6ffbb5..." (v0: test-mode only).
    return {"stripe-signature": ",".join([f"t={t}", *signatures])}


def test_stripe_documented_scheme_verifies_and_names_the_event():
    # Stripe: expected = HMAC-SHA256(secret, "<t>.<payload>"), compared with each v1.
    t = 1492774577
    good = hex_hmac(STRIPE_SECRET, f"{t}.".encode() + STRIPE_BODY)
    headers = stripe_header(t, f"v1={good}", "v0=6ffbb59b2300aae63f272406069a9788598b792a944a07ab")
    verdict = verify(source("stripe", STRIPE_SECRET), headers, STRIPE_BODY, t + 10)
    assert verdict == Verified("evt_1NG8Du2eZvKYlo2CUI79vXWy")


def test_stripe_any_of_several_v1_may_match():
    # While a secret is rolled, Stripe signs with the old and the new one.
    t = int(NOW)
    good = hex_hmac(STRIPE_SECRET, f"{t}.".encode() + STRIPE_BODY)
    headers = stripe_header(t, "v1=" + "ab" * 32, f"v1={good}")
    assert isinstance(verify(source("stripe", STRIPE_SECRET), headers, STRIPE_BODY, NOW), Verified)


@pytest.mark.parametrize(
    "header",
    [
        "v1=" + "ab" * 32,  # no t=
        f"t={int(NOW)}",  # no v1=
        f"t={int(NOW)},v0=" + "ab" * 32,  # only the test-mode scheme
        f"t={int(NOW)},v1=" + "ab" * 32,  # a wrong v1
    ],
)
def test_stripe_unsigned_or_wrongly_signed_is_401(header):
    verdict = verify(source("stripe"), {"stripe-signature": header}, STRIPE_BODY, NOW)
    assert isinstance(verdict, Refused) and verdict.status == 401


def test_stripe_signature_of_another_timestamp_is_refused():
    # The timestamp is signed: moving it to look fresh breaks the signature.
    good = hex_hmac(SECRET, f"{int(NOW) - 1000}.".encode() + STRIPE_BODY)
    headers = stripe_header(int(NOW), f"v1={good}")
    verdict = verify(source("stripe"), headers, STRIPE_BODY, NOW)
    assert isinstance(verdict, Refused) and verdict.outcome == "bad_signature"


@pytest.mark.parametrize("age_s", [301, -301, 10_000])
def test_stripe_timestamp_outside_the_tolerance_is_stale(age_s):
    t = int(NOW) - age_s
    good = hex_hmac(SECRET, f"{t}.".encode() + STRIPE_BODY)
    verdict = verify(source("stripe"), stripe_header(t, f"v1={good}"), STRIPE_BODY, NOW)
    assert isinstance(verdict, Refused)
    assert (verdict.status, verdict.outcome) == (400, "stale")
    assert "more than 300 s" in verdict.reason


def test_stripe_timestamp_just_inside_the_tolerance_is_accepted():
    t = int(NOW) - 300
    good = hex_hmac(SECRET, f"{t}.".encode() + STRIPE_BODY)
    assert isinstance(
        verify(source("stripe"), stripe_header(t, f"v1={good}"), STRIPE_BODY, NOW), Verified
    )


def test_stripe_stale_but_badly_signed_is_a_bad_signature():
    headers = stripe_header(int(NOW) - 10_000, "v1=" + "ab" * 32)
    verdict = verify(source("stripe"), headers, STRIPE_BODY, NOW)
    assert isinstance(verdict, Refused) and verdict.outcome == "bad_signature"


# -- ours: hmac-sha256 -------------------------------------------------------------------------


def test_hmac_sha256_signs_timestamp_dot_body():
    body = b'{"order": 7}'
    stamp = str(int(NOW))
    headers = {
        "x-webhook-timestamp": stamp,
        "x-webhook-signature": "sha256=" + hex_hmac(SECRET, f"{stamp}.".encode() + body),
        "x-webhook-id": "delivery-1",
    }
    assert verify(source("hmac-sha256"), headers, body, NOW + 5) == Verified("delivery-1")
    assert lower(sign(source("hmac-sha256").webhook, SECRET, body, NOW)) == {
        key: value for key, value in headers.items() if key != "x-webhook-id"
    }


@pytest.mark.parametrize(
    ("drop", "why"),
    [
        ("x-webhook-signature", "X-Webhook-Signature"),
        ("x-webhook-timestamp", "X-Webhook-Timestamp"),
    ],
)
def test_hmac_sha256_missing_header_is_401(drop, why):
    headers = lower(sign(source("hmac-sha256").webhook, SECRET, b"{}", NOW))
    del headers[drop]
    verdict = verify(source("hmac-sha256"), headers, b"{}", NOW)
    assert isinstance(verdict, Refused) and verdict.status == 401
    assert f"no {why} header" in verdict.reason


def test_hmac_sha256_wrong_secret_and_stale_timestamp():
    body = b"{}"
    wrong = lower(sign(source("hmac-sha256").webhook, "another secret", body, NOW))
    verdict = verify(source("hmac-sha256"), wrong, body, NOW)
    assert isinstance(verdict, Refused) and verdict.outcome == "bad_signature"
    old = lower(sign(source("hmac-sha256", tolerance_s=30).webhook, SECRET, body, NOW - 31))
    verdict = verify(source("hmac-sha256", tolerance_s=30), old, body, NOW)
    assert isinstance(verdict, Refused) and (verdict.status, verdict.outcome) == (400, "stale")


def test_the_reason_never_shows_the_secret_or_the_signature():
    headers = lower(sign(source("hmac-sha256").webhook, SECRET, b"{}", NOW - 1000))
    verdict = verify(source("hmac-sha256"), headers, b"{}", NOW)
    assert isinstance(verdict, Refused)
    assert SECRET not in verdict.reason
    assert headers["x-webhook-signature"].removeprefix("sha256=") not in verdict.reason


# -- secrets -----------------------------------------------------------------------------------


def test_secrets_come_from_the_given_environment_and_are_masked():
    hook = Webhook(name="gh", secret_env="GH_SECRET", signature="github")
    sources = resolve_secrets([hook], {"GH_SECRET": "hunter2hunter2"})
    assert sources["gh"].webhook is hook
    assert "hunter2" not in repr(sources) and "hunter2" not in str(sources["gh"].secret)


@pytest.mark.parametrize(
    ("environ", "state"), [({}, "is not set"), ({"GH_SECRET": ""}, "is empty")]
)
def test_a_missing_secret_names_the_webhook_and_the_variable(environ, state):
    hook = Webhook(name="gh", secret_env="GH_SECRET", signature="github")
    with pytest.raises(WebhookConfigError) as caught:
        resolve_secrets([hook], environ)
    message = str(caught.value)
    assert "webhook 'gh'" in message and f"GH_SECRET {state}" in message
    assert "export GH_SECRET=" in message


# -- which jobs a delivery starts -------------------------------------------------------------

YAML = """
webhooks:
  - {name: shop, secret_env: SHOP_SECRET, signature: stripe}
workflows:
  - name: on-paid
    triggers:
      - {webhook: shop, when: "type == 'invoice.paid'", payload: "{invoice: data.id}"}
    steps: [{name: a}]
  - name: on-anything
    triggers: [{webhook: shop}]
    steps: [{name: a}]
  - name: not-triggered
    steps: [{name: a}]
"""


def test_matching_jobs_runs_when_and_maps_the_payload():
    workflows = parse_workflows(YAML).values()
    body = json.loads('{"type": "invoice.paid", "data": {"id": "in_1"}}')
    found = matching_jobs("shop", "evt_1", body, workflows)
    assert [(m.workflow, m.payload) for m in found] == [
        ("on-paid", {"invoice": "in_1"}),
        ("on-anything", body),
    ]
    assert found[0].job_id == webhook_job_id("shop", "evt_1", "on-paid")
    other = matching_jobs("shop", "evt_2", {"type": "charge.failed"}, workflows)
    assert [m.workflow for m in other] == ["on-anything"]
    assert matching_jobs("elsewhere", "evt_1", body, workflows) == []


def test_job_ids_are_the_same_per_delivery_and_differ_across():
    first = webhook_job_id("shop", "evt_1", "on-paid")
    assert first == webhook_job_id("shop", "evt_1", "on-paid")
    assert len({first, webhook_job_id("shop", "evt_2", "on-paid")}) == 2
    assert first != webhook_job_id("shop", "evt_1", "on-anything")


def test_a_trigger_that_cannot_be_evaluated_is_reported_not_started():
    workflows = parse_workflows(
        """
webhooks: [{name: shop, secret_env: S, signature: stripe}]
workflows:
  - name: w
    triggers: [{webhook: shop, when: "length(n) > `1`"}]
    steps: [{name: a}]
"""
    ).values()
    (found,) = matching_jobs("shop", "evt_1", {"n": 5}, workflows)
    assert found.workflow == "w" and found.error is not None
    assert "cannot be evaluated" in found.error
