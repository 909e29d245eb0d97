"""The one error of the shared AMQP layer: a reconnect setting is invalid.

It subclasses `ValueError` so that callers with no error tree of their own can treat it as
bad input; pyworker and the manager's transport translate it into theirs.
"""

from __future__ import annotations

__all__ = ["ReconnectSettingsError"]


class ReconnectSettingsError(ValueError):
    """A reconnect setting (backoff parameter, the URL's `reconnect_interval`) is invalid."""
