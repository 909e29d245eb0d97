"""The API token: checked once when the manager starts, compared in constant time, never shown."""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["MIN_TOKEN_LENGTH", "ApiToken", "token_problem"]

MIN_TOKEN_LENGTH = 16
_SUGGESTION = "e.g. WM_API_TOKEN=$(openssl rand -hex 32)"


def token_problem(secret: str) -> str | None:
    """Why `secret` cannot be an API token, or None. Never quotes the secret itself."""
    if not secret:
        return "an API token cannot be empty"
    for position, char in enumerate(secret, start=1):
        if not char.isascii():
            # An HTTP header carries ASCII only: a client could never send this token.
            return (
                f"the API token has a non-ASCII character at position {position}: HTTP "
                f"headers carry ASCII only; use letters, digits and punctuation ({_SUGGESTION})"
            )
        if not char.isprintable():
            return (
                f"the API token has a control character at position {position}; use letters, "
                f"digits and punctuation ({_SUGGESTION})"
            )
    if secret != secret.strip():
        return "the API token starts or ends with a space, which clients strip; remove it"
    if len(secret) < MIN_TOKEN_LENGTH:
        return (
            f"the API token is {len(secret)} character{'s' if len(secret) != 1 else ''} long: "
            f"use at least "
            f"{MIN_TOKEN_LENGTH}, so it cannot be guessed ({_SUGGESTION})"
        )
    return None


class ApiToken:
    """The shared secret; compared in constant time, shown as `***` in reprs.

    Raises ValueError (saying why, never quoting it) for a secret no client could use or
    that is too short to keep anyone out: see `token_problem`.
    """

    __slots__ = ("_secret",)

    def __init__(self, secret: str) -> None:
        problem = token_problem(secret)
        if problem is not None:
            raise ValueError(problem)
        self._secret = secret.encode()

    def matches(self, candidate: str | bytes | None) -> bool:
        """True when `candidate` is the token (constant time, whatever its length)."""
        if candidate is None:
            return False
        # Any text: a candidate that is not UTF-8-encodable (a lone surrogate) matches nothing.
        given = candidate.encode(errors="replace") if isinstance(candidate, str) else candidate
        return hmac.compare_digest(self._secret, given)

    def derive_key(self, purpose: bytes) -> bytes:
        """A key for `purpose` (e.g. signing sessions) derived from the token: the token
        itself is never used as a key, and one purpose's key tells nothing of another's."""
        return hmac.new(self._secret, purpose, hashlib.sha256).digest()

    def __repr__(self) -> str:
        return "ApiToken('***')"

    __str__ = __repr__
