"""The one error of payload references: a reference that cannot be resolved, or a value that
cannot be stored. Each side wraps it in its own error tree where it has one."""

from __future__ import annotations

__all__ = ["PayloadRefError"]


class PayloadRefError(Exception):
    """A payload reference cannot be resolved, or a value cannot be stored: its message names
    the reference (`wm://<store>/<key>`) or the store, and why."""
