"""The web UI's static files: one HTML shell, plain ES modules and a stylesheet (no build step).

`workflow_manager.api.ui` serves them; nothing here is fetched from the internet, so the UI works on
an air-gapped host. The JS shows every user value as text (see dom.js), never as markup.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ASSETS_DIR"]

ASSETS_DIR = Path(__file__).resolve().parent
