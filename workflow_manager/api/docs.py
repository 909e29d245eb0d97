"""The API's docs page, `/docs` (Swagger UI), with no CDN.

FastAPI's own pages load unpinned scripts from a CDN into the origin that holds the UI's
session cookie. This one loads Swagger UI from the installed `fastapi-offline` package
(pinned with the manager's dependencies) at `/docs/assets/`, and starts it from a script
file of the UI (no inline script), so it runs under the UI's Content-Security-Policy:
nothing is fetched from another origin. Like `/openapi.json`, it needs the API token when
the manager has one (the UI's session cookie opens it in a browser).

There is no `/redoc`: Redoc styles its page with inline `<style>` elements, which that
policy blocks (it fails to render), and a weaker policy for one page is not worth a second
view of the same document.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter, FastAPI, HTTPException
from fastapi.responses import FileResponse

from workflow_manager.api.ui import MEDIA_TYPES, SECURITY_HEADERS
from workflow_manager.ui import ASSETS_DIR

__all__ = ["install_docs", "VENDOR_ASSETS"]

VENDOR_ASSETS = frozenset({"swagger-ui-bundle.js", "swagger-ui.css"})
"""The files served from the package: Swagger UI's bundle and style."""

router = APIRouter(include_in_schema=False)
# The package's files change only with its version; a browser revalidates each load (ETag).
_HEADERS = {**SECURITY_HEADERS, "Cache-Control": "no-cache"}


def _vendor_dir() -> Path:
    """Where fastapi-offline keeps its copy of Swagger UI."""
    return Path(str(files("fastapi_offline") / "static"))


def _page(name: str) -> FileResponse:
    return FileResponse(ASSETS_DIR / name, media_type="text/html; charset=utf-8", headers=_HEADERS)


@router.get("/docs")
async def swagger_page() -> FileResponse:
    """Swagger UI over /openapi.json."""
    return _page("apidocs.html")


@router.get("/docs/assets/{name}")
async def vendor_asset(name: str) -> FileResponse:
    """One of VENDOR_ASSETS; 404 for any other name."""
    if name not in VENDOR_ASSETS:
        raise HTTPException(status_code=404, detail=f"no docs asset {name!r}")
    media_type = MEDIA_TYPES[Path(name).suffix]
    return FileResponse(_vendor_dir() / name, media_type=media_type, headers=_HEADERS)


def install_docs(app: FastAPI) -> None:
    """Serve /docs and its assets (create the app with docs_url=redoc_url=None)."""
    app.include_router(router)
