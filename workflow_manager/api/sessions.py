"""The web UI's login session: a signed, expiring cookie that is not the token; and the
throttle on wrong logins.

A session is a signed value, not a row in memory: `EXPIRES.NONCE.MAC`, the MAC an
HMAC-SHA256 with a key derived from the API token. Signed rather than stored because every
manager of a cluster has the same token: a session opened on one is good on the others (a
request forwarded to the manager running a job carries the cookie; a load balancer may send
the next page to another manager), and it survives a manager's restart. The nonce (256
random bits) makes each session distinct, so a logout can revoke it: the manager that
answered the logout keeps the nonce until the session would have expired (the others accept
it until then; the browser has dropped it). Changing the token ends every session.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections import deque
from collections.abc import Callable

from workflow_manager.api.token import ApiToken

__all__ = ["COOKIE_NAME", "SECURE_COOKIE_NAME", "LoginThrottle", "Sessions"]

COOKIE_NAME = "wm_session"
# Over HTTPS: the `__Host-` prefix makes the browser refuse the cookie unless it is Secure,
# has Path=/ and no Domain, so no sibling host can plant or widen it.
SECURE_COOKIE_NAME = "__Host-" + COOKIE_NAME
_PURPOSE = b"workflow-manager web UI session v1"
_NONCE_BYTES = 32  # 256 bits


def _mac(key: bytes, payload: str) -> str:
    digest = hmac.new(key, payload.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class Sessions:
    """Opens, checks and ends web UI sessions signed with a key derived from the token."""

    def __init__(self, token: ApiToken, ttl_s: float, clock: Callable[[], float] = time.time):
        self._key = token.derive_key(_PURPOSE)
        self.ttl_s = ttl_s
        self._clock = clock
        self._revoked: dict[str, float] = {}  # nonce -> when its session expires anyway

    def open(self) -> str:
        """A new session's cookie value, good for `ttl_s`."""
        expires = int(self._clock() + self.ttl_s)
        payload = f"{expires}.{secrets.token_urlsafe(_NONCE_BYTES)}"
        return f"{payload}.{_mac(self._key, payload)}"

    def expires_at(self, value: str | None) -> float | None:
        """When the session `value` ends; None when it is no session of ours, is over or was
        ended by a logout."""
        parts = (value or "").split(".")
        if len(parts) != 3 or not parts[0].isdigit():
            return None
        payload = f"{parts[0]}.{parts[1]}"
        if not hmac.compare_digest(_mac(self._key, payload), parts[2]):
            return None
        expires = float(parts[0])
        if expires <= self._clock() or parts[1] in self._revoked:
            return None
        return expires

    def end(self, value: str | None) -> bool:
        """Revoke the session `value` here (a logout); False when it was no live session."""
        expires = self.expires_at(value)
        if expires is None:
            return False
        now = self._clock()
        self._revoked = {n: t for n, t in self._revoked.items() if t > now}  # forget the over
        self._revoked[(value or "").split(".")[1]] = expires
        return True


class LoginThrottle:
    """Wrong logins counted per client address over the last minute; past `per_minute` of
    them, that address waits (every login, right or wrong: else a 204 among 429s would tell
    a guesser which guess was right)."""

    WINDOW_S = 60.0
    MAX_ADDRESSES = 10_000  # bounded memory under a spray of addresses

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}

    def wait_s(self, address: str) -> float:
        """Seconds before `address` may try again; 0 when it may now."""
        failures = self._failures.get(address)
        if failures is None or len(failures) < self.per_minute:
            return 0.0
        return max(0.0, failures[0] + self.WINDOW_S - self._clock())

    def failed(self, address: str) -> None:
        """Count a wrong login from `address`."""
        now = self._clock()
        if address not in self._failures and len(self._failures) >= self.MAX_ADDRESSES:
            self._forget_quiet(now)
        failures = self._failures.setdefault(address, deque(maxlen=self.per_minute))
        failures.append(now)

    def succeeded(self, address: str) -> None:
        """A right login from `address`: its count starts again."""
        self._failures.pop(address, None)

    def _forget_quiet(self, now: float) -> None:
        """Drop the addresses with no failure in the window (the oldest half if none is)."""
        quiet = [a for a, f in self._failures.items() if f[-1] + self.WINDOW_S <= now]
        if not quiet:
            by_age = sorted(self._failures, key=lambda a: self._failures[a][-1])
            quiet = by_age[: len(by_age) // 2 or 1]
        for address in quiet:
            del self._failures[address]
