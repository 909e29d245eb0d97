"""Links from a docs page to files of the repository outside docs/ (examples, deploy files).

The site holds only docs/, so such a link would be broken there; on the repository's own
web view it works. On the site each one becomes the file's repository path in code (a link
into `repo_url` when the site has one), after checking that the file exists: a link to a
missing file is reported, so `mkdocs build --strict` fails on it like on any broken link.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath

__all__ = ["rewrite"]

# [text](target) with a relative target; images (![...]) are left to MkDocs.
_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]\n]+)\]\((?P<target>[^)\s#:]+[^)\s:]*)\)")
_FENCE = re.compile(r"^( *)(```|~~~)")


def rewrite(
    markdown: str,
    page_path: Path,
    docs_dir: Path,
    repo_root: Path,
    report: Callable[[str], None],
    repo_url: str | None = None,
) -> str:
    """`markdown` with its links that leave `docs_dir` rewritten; `report` names missing files."""
    out: list[str] = []
    fence: str | None = None
    for line in markdown.splitlines(keepends=True):
        opened = _FENCE.match(line)
        if opened:  # a fence opens, or closes the one open: code is left as it is
            if fence is None:
                fence = opened.group(2)
            elif opened.group(2) == fence:
                fence = None
        if opened or fence is not None:
            out.append(line)
            continue

        def replace(match: re.Match[str]) -> str:
            return _replacement(match, page_path, docs_dir, repo_root, report, repo_url)

        out.append(_LINK.sub(replace, line))
    return "".join(out)


def _replacement(
    match: re.Match[str],
    page_path: Path,
    docs_dir: Path,
    repo_root: Path,
    report: Callable[[str], None],
    repo_url: str | None,
) -> str:
    target, _, fragment = match.group("target").partition("#")
    resolved = (page_path.parent / target).resolve()
    if resolved.is_relative_to(docs_dir.resolve()):
        return match.group(0)  # MkDocs checks links inside the site itself
    if not resolved.is_relative_to(repo_root.resolve()) or not resolved.exists():
        shown = (
            page_path.relative_to(repo_root) if page_path.is_relative_to(repo_root) else page_path
        )
        report(f"{shown} links to '{match.group('target')}', which is not in the repository")
        return match.group(0)
    path = PurePosixPath(resolved.relative_to(repo_root.resolve()).as_posix())
    shown_path = f"{path}/" if resolved.is_dir() else str(path)
    text = match.group("text")
    if repo_url:
        anchor = f"#{fragment}" if fragment else ""
        return f"[{text}]({repo_url.rstrip('/')}/blob/main/{shown_path}{anchor})"
    if shown_path.rstrip("/") in text:
        return text
    return f"{text} (`{shown_path}`)"
