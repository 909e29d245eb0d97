"""The UI's files, read as text: values reach the page only as text, and nothing is inline.

The browser tests (tests/integration/ui) prove the same on real pages; these catch a slip in
any module at once, including pages those tests do not open.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workflow_manager.api.docs import VENDOR_ASSETS
from workflow_manager.api.ui import MEDIA_TYPES
from workflow_manager.ui import ASSETS_DIR

SCRIPTS = sorted(ASSETS_DIR.rglob("*.js"))
PAGES = sorted(ASSETS_DIR.glob("*.html"))
# Ways to turn a string into markup or code; dom.js builds elements with textContent only.
FORBIDDEN = re.compile(
    r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|"
    r"javascript:|setHTMLUnsafe|createContextualFragment"
)
IMPORT = re.compile(r"""^\s*import\s[^;]*?from\s+"([^"]+)";""", re.M | re.S)


def test_there_are_scripts_and_pages():
    assert {p.name for p in PAGES} == {"index.html", "login.html", "apidocs.html"}
    assert len(SCRIPTS) >= 10


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ASSETS_DIR)))
def test_no_script_turns_text_into_markup_or_code(script: Path):
    found = FORBIDDEN.findall(script.read_text())
    assert found == [], f"{script.name} uses {found}: build elements with dom.js instead"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ASSETS_DIR)))
def test_every_import_is_a_served_file_of_the_ui(script: Path):
    for target in IMPORT.findall(script.read_text()):
        assert target.startswith("./") or target.startswith("../"), (script.name, target)
        resolved = (script.parent / target).resolve()
        assert resolved.is_file() and resolved.is_relative_to(ASSETS_DIR), (script.name, target)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_pages_have_no_inline_script_or_style_and_load_only_their_own_assets(page: Path):
    html = page.read_text()
    scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", html, re.S)
    assert scripts and all(body.strip() == "" for body in scripts)  # only src=, no inline code
    assert re.search(r"\sstyle=|<style\b|\son[a-z]+=", html) is None
    for url in re.findall(r'(?:src|href)="([^"]+)"', html):
        if url.startswith("/docs/assets/"):  # the API docs' tools, from a package
            assert url.removeprefix("/docs/assets/") in VENDOR_ASSETS, url
            continue
        assert url.startswith("/ui/"), url
        if url.startswith("/ui/assets/"):
            asset = ASSETS_DIR / url.removeprefix("/ui/assets/")
            assert asset.is_file() and asset.suffix in MEDIA_TYPES, url


def test_every_asset_has_a_type_the_server_serves():
    files = [p for p in ASSETS_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    odd = [p.name for p in files if p.suffix not in {*MEDIA_TYPES, ".html", ".py"}]
    assert odd == []
