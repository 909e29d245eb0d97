"""The web UI's routes: one HTML shell for every page, its static assets, and the login page.

The pages are plain ES modules (workflow_manager/ui/) that read the JSON API; the JS routes on the
path, so every page route answers the same shell. None of these routes is part of the API's
OpenAPI document; the login page is served with the login (workflow_manager.api.access), only when
the manager has a token. `UiHeaders` gives every UI answer (redirects and errors too) a strict
Content-Security-Policy: no inline script or style, nothing from another origin.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, RedirectResponse
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workflow_manager.ui import ASSETS_DIR

__all__ = ["CSP", "MEDIA_TYPES", "SECURITY_HEADERS", "UiHeaders", "is_ui_path", "page", "router"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    # Never to another origin; to its own, so that a form's POST carries the page's Origin
    # (with no-referrer, Chromium sends `Origin: null`, which workflow_manager.api.origin refuses).
    "Referrer-Policy": "same-origin",
}
MEDIA_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
# Revalidate each time (ETag): a manager upgrade must not leave old modules in a browser.
_NO_STALE = {"Cache-Control": "no-cache"}

router = APIRouter(include_in_schema=False)


def is_ui_path(path: str) -> bool:
    """True for `/` and the pages and assets under `/ui`."""
    return path in ("/", "/ui") or path.startswith("/ui/")


class UiHeaders:
    """ASGI middleware: add SECURITY_HEADERS to every answer on a UI path."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_ui_path(scope.get("path", "")):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


def page(name: str) -> FileResponse:
    """One of the UI's HTML pages (`index.html`, `login.html`)."""
    return FileResponse(ASSETS_DIR / name, media_type="text/html; charset=utf-8", headers=_NO_STALE)


@router.get("/")
async def root() -> RedirectResponse:
    """The UI is the front page."""
    return RedirectResponse("/ui/", status_code=307)


@router.get("/ui")
async def ui_root() -> RedirectResponse:
    """`/ui` without its slash: the overview."""
    return RedirectResponse("/ui/", status_code=307)


@router.get("/ui/")
@router.get("/ui/job/{job_id}")
@router.get("/ui/workflow/{name}")
@router.get("/ui/dead-letters")
@router.get("/ui/cluster")
async def shell() -> FileResponse:
    """Every page: the one shell; its script routes on `location.pathname`."""
    return page("index.html")


@router.get("/ui/assets/{path:path}")
async def asset(path: str) -> FileResponse:
    """A script, stylesheet or icon of the UI; 404 for anything else."""
    file = (ASSETS_DIR / path).resolve()
    media_type = MEDIA_TYPES.get(file.suffix)
    if media_type is None or not _inside(file, ASSETS_DIR) or not file.is_file():
        raise HTTPException(status_code=404, detail=f"no UI asset {path!r}")
    return FileResponse(file, media_type=media_type, headers=_NO_STALE)


def _inside(file: Path, folder: Path) -> bool:
    """True when `file` is under `folder` (so `../` cannot reach the rest of the disk)."""
    return file.is_relative_to(folder)
