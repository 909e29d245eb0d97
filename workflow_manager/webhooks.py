"""Signed webhook requests: checking a signature, and which jobs a verified request starts. Pure.

Three schemes (`signature:` of a source in `webhooks:`), each an HMAC-SHA256 under the source's
secret, compared in constant time (`hmac.compare_digest`):

* `github`: `X-Hub-Signature-256: sha256=<hex of the HMAC of the raw body>`; the delivery is
  `X-GitHub-Delivery`. GitHub signs no timestamp, so a captured request is not refused as stale:
  its replay is answered with the jobs its delivery id already started, nothing more.
* `stripe`: `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]`, the HMAC of
  `<t>.<raw body>`; any one `v1` may match (Stripe sends several while a secret is rolled);
  the delivery is the event's `id` in the body.
* `hmac-sha256` (ours, for any other sender): `X-Webhook-Timestamp: <unix seconds>` and
  `X-Webhook-Signature: sha256=<hex of the HMAC of "<timestamp>.<raw body>">`; the delivery is
  `X-Webhook-Id`.

A timestamp more than the source's `tolerance_s` away from the manager's clock is stale.
Without a delivery id, the hash of what was signed stands for it.
The secret is read from the environment once, at start (`resolve_secrets`), and never shown.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from workflow_manager.config.expressions import ExpressionError
from workflow_manager.config.models import Workflow
from workflow_manager.config.webhooks import Webhook
from workflow_manager.errors import ManagerError

__all__ = [
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "DELIVERY_HEADER",
    "Secret",
    "Source",
    "Verified",
    "Refused",
    "WebhookConfigError",
    "resolve_secrets",
    "verify",
    "sign",
    "webhook_job_id",
    "Match",
    "matching_jobs",
]

SIGNATURE_HEADER = "x-webhook-signature"
TIMESTAMP_HEADER = "x-webhook-timestamp"
DELIVERY_HEADER = "x-webhook-id"
_GITHUB_SIGNATURE = "x-hub-signature-256"
_GITHUB_DELIVERY = "x-github-delivery"
_STRIPE_SIGNATURE = "stripe-signature"
MAX_DELIVERY_ID = 200
"""Characters of a delivery id kept (a longer one is hashed): it only names a delivery."""


class WebhookConfigError(ManagerError):
    """A webhook source cannot be served: its secret's environment variable is unset or empty."""


class Secret:
    """A webhook's secret: compared and used as an HMAC key, never shown (repr and str mask it)."""

    __slots__ = ("_key",)

    def __init__(self, value: str) -> None:
        self._key = value.encode()

    def digest(self, message: bytes) -> str:
        """The hex HMAC-SHA256 of `message` under this secret."""
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__


@dataclass(frozen=True, slots=True)
class Source:
    """A declared webhook source with its secret: what `POST /hooks/<name>` checks against."""

    webhook: Webhook
    secret: Secret

    @property
    def name(self) -> str:
        """The source's name (the path's last part)."""
        return self.webhook.name


def resolve_secrets(webhooks: Iterable[Webhook], environ: Mapping[str, str]) -> dict[str, Source]:
    """Each source by name with its secret from `environ`; WebhookConfigError naming the
    webhook and the variable when one is unset or empty (the value is never in a message)."""
    sources: dict[str, Source] = {}
    for hook in webhooks:
        value = environ.get(hook.secret_env, "")
        if not value:
            state = "is empty" if hook.secret_env in environ else "is not set"
            raise WebhookConfigError(
                f"webhook {hook.name!r}: its secret's environment variable {hook.secret_env} "
                f"{state}; export {hook.secret_env}=<the secret the sender signs with> before "
                "starting the manager"
            )
        sources[hook.name] = Source(hook, Secret(value))
    return sources


@dataclass(frozen=True, slots=True)
class Verified:
    """A request whose signature holds; `delivery` names the sender's delivery (redeliveries
    share it)."""

    delivery: str


@dataclass(frozen=True, slots=True)
class Refused:
    """A request refused: `outcome` (bad_signature: 401, stale: 400) and why, for the answer
    and the log (never the secret nor the signature)."""

    outcome: Literal["bad_signature", "stale"]
    reason: str

    @property
    def status(self) -> int:
        """The HTTP status it is answered with."""
        return 401 if self.outcome == "bad_signature" else 400


def verify(
    source: Source, headers: Mapping[str, str], body: bytes, now: float
) -> Verified | Refused:
    """Check a request's signature (`headers` with lower-case names) under `source`'s scheme.

    The signature is checked before the timestamp: a stale request with a bad signature is a
    bad signature (401), so no one learns what the clock accepts without the secret.
    """
    kind = source.webhook.signature
    if kind == "github":
        return _github(source, headers, body)
    if kind == "stripe":
        return _stripe(source, headers, body, now)
    return _hmac_sha256(source, headers, body, now)


def _github(source: Source, headers: Mapping[str, str], body: bytes) -> Verified | Refused:
    given = headers.get(_GITHUB_SIGNATURE)
    if given is None:
        return _unsigned(f"no {_header_name(_GITHUB_SIGNATURE)} header")
    if not _matches(source.secret.digest(body), given.strip().removeprefix("sha256=")):
        return _mismatch(_header_name(_GITHUB_SIGNATURE))
    return Verified(_delivery(headers.get(_GITHUB_DELIVERY), body))


def _stripe(
    source: Source, headers: Mapping[str, str], body: bytes, now: float
) -> Verified | Refused:
    given = headers.get(_STRIPE_SIGNATURE)
    if given is None:
        return _unsigned("no Stripe-Signature header")
    items = [part.strip().partition("=") for part in given.split(",")]
    stamps = [value for key, _, value in items if key == "t"]
    signatures = [value for key, _, value in items if key == "v1"]
    if len(stamps) != 1 or not signatures:
        return _unsigned("the Stripe-Signature header has no t= timestamp or no v1= signature")
    expected = source.secret.digest(stamps[0].encode() + b"." + body)
    # Every v1 is compared (no early exit): the time taken does not say which one matched.
    if not sum(_matches(expected, signature) for signature in signatures):
        return _mismatch("Stripe-Signature")
    stale = _stale(stamps[0], now, source.webhook.tolerance_s, "t= timestamp")
    return stale or Verified(_delivery(_event_id(body), stamps[0].encode() + b"." + body))


def _hmac_sha256(
    source: Source, headers: Mapping[str, str], body: bytes, now: float
) -> Verified | Refused:
    given, stamp = headers.get(SIGNATURE_HEADER), headers.get(TIMESTAMP_HEADER)
    if given is None or stamp is None:
        missing = _header_name(SIGNATURE_HEADER if given is None else TIMESTAMP_HEADER)
        return _unsigned(f"no {missing} header")
    signed = stamp.strip().encode() + b"." + body
    if not _matches(source.secret.digest(signed), given.strip().removeprefix("sha256=")):
        return _mismatch(_header_name(SIGNATURE_HEADER))
    stale = _stale(stamp, now, source.webhook.tolerance_s, _header_name(TIMESTAMP_HEADER))
    return stale or Verified(_delivery(headers.get(DELIVERY_HEADER), signed))


def _matches(expected: str, given: str) -> bool:
    """Constant-time comparison of two hex digests (letter case ignored)."""
    return hmac.compare_digest(expected.encode(), given.strip().lower().encode("ascii", "replace"))


def _stale(stamp: str, now: float, tolerance_s: float, what: str) -> Refused | None:
    """A Refused when `stamp` (Unix seconds) is not a number or is over `tolerance_s` from now."""
    try:
        sent = float(stamp.strip())
    except ValueError:
        return Refused("stale", f"the {what} is not Unix seconds")
    if not math.isfinite(sent) or abs(now - sent) > tolerance_s:
        return Refused(
            "stale",
            f"the {what} is more than {tolerance_s:g} s from the manager's clock (tolerance_s); "
            "a replayed request, or a clock to set right",
        )
    return None


def _unsigned(reason: str) -> Refused:
    return Refused("bad_signature", f"the request is not signed: {reason}")


def _mismatch(header: str) -> Refused:
    return Refused("bad_signature", f"the {header} signature does not match this webhook's secret")


def _header_name(lower: str) -> str:
    return "-".join(
        "GitHub" if part == "github" else part.upper() if part == "x" else part.capitalize()
        for part in lower.split("-")
    )


def _event_id(body: bytes) -> str | None:
    """A Stripe event's `id` (the body is JSON; the route parsed it already, this reads it
    again only for the id, and a body that is not JSON has none)."""
    try:
        value = json.loads(body)
    except ValueError:
        return None
    found = value.get("id") if isinstance(value, dict) else None
    return found if isinstance(found, str) and found else None


def _delivery(given: str | None, signed: bytes) -> str:
    """The delivery id: the sender's (shortened by a hash if long), else the hash of what it
    signed (the same request sent again is the same delivery)."""
    given = (given or "").strip()
    if given and len(given) <= MAX_DELIVERY_ID:
        return given
    return "sha256:" + hashlib.sha256(given.encode() if given else signed).hexdigest()


def sign(webhook: Webhook, secret: str, body: bytes, timestamp: float) -> dict[str, str]:
    """The headers a sender of `webhook`'s scheme sends with `body` (for tests and examples)."""
    key = Secret(secret)
    stamp = str(int(timestamp))
    if webhook.signature == "github":
        return {"X-Hub-Signature-256": "sha256=" + key.digest(body)}
    if webhook.signature == "stripe":
        return {"Stripe-Signature": f"t={stamp},v1={key.digest(stamp.encode() + b'.' + body)}"}
    digest = key.digest(stamp.encode() + b"." + body)
    return {"X-Webhook-Timestamp": stamp, "X-Webhook-Signature": f"sha256={digest}"}


def webhook_job_id(webhook: str, delivery: str, workflow: str) -> str:
    """The id of the job a delivery starts for a workflow: the same for every redelivery."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"webhook:{webhook}/{delivery}/{workflow}"))


@dataclass(frozen=True, slots=True)
class Match:
    """A job a delivery starts: its workflow, id and payload; or why the trigger could not be
    evaluated over this body (`error`, no job)."""

    workflow: str
    job_id: str
    payload: Any
    error: str | None = None


def matching_jobs(
    webhook: str, delivery: str, body: Any, workflows: Iterable[Workflow]
) -> list[Match]:
    """One job per workflow with a trigger on `webhook` whose `when` holds over `body` (the
    first such trigger of each workflow), with its mapped payload."""
    found: list[Match] = []
    for workflow in workflows:
        job_id = webhook_job_id(webhook, delivery, workflow.name)
        for trigger in workflow.triggers:
            if trigger.webhook != webhook:
                continue
            try:
                if trigger.condition is not None and not trigger.condition.holds(body):
                    continue
                payload = trigger.mapping.search(body) if trigger.mapping is not None else body
            except ExpressionError as exc:
                found.append(Match(workflow.name, job_id, None, str(exc)))
                break
            found.append(Match(workflow.name, job_id, payload))
            break
    return found
