"""The code examples of the documentation: every fenced block of README.md and docs/**/*.md.

tests/unit/docs/ runs them by language. A block that is not meant to run on its own (a
fragment of a bigger file, a file of another tool) has `<!-- not run: why -->` on the line
right before its fence, so the tests know to leave it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Example", "doc_files", "examples_in"]

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
_NOT_RUN = re.compile(r"^\s*<!--\s*not run:\s*(?P<why>.+?)\s*-->\s*$")


@dataclass(frozen=True)
class Example:
    """One fenced code block: where it is, its language and text, and why it is not run."""

    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    not_run: str | None = None

    @property
    def where(self) -> str:
        """`file:line`, for test ids and failure messages."""
        return f"{self.path.name}:{self.line}"


def doc_files(repo_root: Path) -> list[Path]:
    """README.md and every Markdown page of the site, in a stable order."""
    return [repo_root / "README.md", *sorted((repo_root / "docs").rglob("*.md"))]


def examples_in(path: Path) -> list[Example]:
    """The fenced code blocks of the Markdown file at `path`, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    index = 0
    while index < len(lines):
        opened = _FENCE.match(lines[index])
        if not opened:
            index += 1
            continue
        indent, fence = len(opened.group("indent")), opened.group("fence")
        body: list[str] = []
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            body.append(lines[end][indent:] if lines[end][:indent].isspace() else lines[end])
            end += 1
        marker = _NOT_RUN.match(lines[index - 1]) if index else None
        code = "\n".join(body) + "\n"
        why = marker.group("why") if marker else None
        found.append(Example(path, index + 1, opened.group("lang").lower(), code, why))
        index = end + 1
    return found
