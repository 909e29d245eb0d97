"""Payload references as people read them: their size, never their content.

A value stored by reference (`{"$ref": "wm://<store>/<key>", "sha256": ..., "size": ...}`,
docs/protocol.md "Payloads by reference") is shown as `stored value · 100.0 MB · sha256
9f86d081…`, as the web UI does (workflow_manager/ui/refs.js). Nothing here reads a store.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from payload_refs.refs import Ref, as_ref

__all__ = ["human_size", "ref_text", "refs_with_paths", "ref_lines"]

_UNITS = ("kB", "MB", "GB", "TB", "PB")


def human_size(size: int) -> str:
    """A byte count in decimal units: `512 B`, `1.5 kB`, `100.0 MB`."""
    if size < 0:
        return "unknown size"
    if size < 1000:
        return f"{size} B"
    value = float(size)
    unit = -1
    while value >= 1000 and unit < len(_UNITS) - 1:
        value /= 1000
        unit += 1
    return f"{value:.1f} {_UNITS[unit]}"


def ref_text(ref: Ref) -> str:
    """`stored value · 100.0 MB · sha256 9f86d081…`."""
    digest = f"{ref.sha256[:8]}…" if ref.sha256 else "none"
    return f"stored value · {human_size(ref.size)} · sha256 {digest}"


def refs_with_paths(value: Any, path: str = "") -> Iterator[tuple[str, Ref]]:
    """Every reference in `value` with where it is (`report`, `items[3].file`), in order."""
    if type(value) is dict:
        ref = as_ref(value)
        if ref is not None:
            yield path or "(the whole value)", ref
            return
        for key, item in value.items():
            yield from refs_with_paths(item, f"{path}.{key}" if path else str(key))
    elif type(value) is list:
        for index, item in enumerate(value):
            yield from refs_with_paths(item, f"{path}[{index}]")


def ref_lines(value: Any, indent: str = "  ", limit: int = 5) -> list[str]:
    """One line per reference in `value` (at most `limit`, then how many more)."""
    found = list(refs_with_paths(value))
    lines = [f"{indent}{path}: {ref_text(ref)}" for path, ref in found[:limit]]
    if len(found) > limit:
        lines.append(f"{indent}… and {len(found) - limit} more stored values")
    return lines
