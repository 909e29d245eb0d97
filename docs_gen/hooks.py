"""MkDocs hooks (mkdocs.yml `hooks:`): generated reference pages and links into the repository.

A page holding the line `<!-- generated: http-api -->` or `<!-- generated: cli -->` gets it
replaced by the reference rendered now from the code (the app's OpenAPI document; the
parsers' `--help`), so those pages cannot go stale. Links that leave docs/ are checked and
rewritten by `docs_gen.repo_links`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# MkDocs loads this file by path with only its own folder on sys.path; docs_gen is a folder
# of the repository (a build tool, not part of the installed distribution).
REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from docs_gen import cli_page, openapi_page, repo_links  # noqa: E402

# Under "mkdocs." so that `mkdocs build --strict` counts its warnings.
log = logging.getLogger("mkdocs.hooks.docs_gen")

MARKER = "<!-- generated: {name} -->"

GENERATORS: dict[str, Callable[[], str]] = {
    "http-api": lambda: openapi_page.render(openapi_page.api_document()),
    "cli": lambda: cli_page.render(cli_page.parsers()),
}

_rendered: dict[str, str] = {}  # per build process: each page is generated once


def generated(name: str) -> str:
    """The generated Markdown called `name`, rendered on first use."""
    if name not in _rendered:
        _rendered[name] = GENERATORS[name]()
    return _rendered[name]


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill in generated sections, then check and rewrite links that leave docs/."""
    for name in GENERATORS:
        marker = MARKER.format(name=name)
        if marker in markdown:
            markdown = markdown.replace(marker, generated(name))
    return repo_links.rewrite(
        markdown,
        page_path=Path(page.file.abs_src_path),
        docs_dir=Path(config["docs_dir"]),
        repo_root=REPO_ROOT,
        report=log.warning,
        repo_url=config.get("repo_url"),
    )
