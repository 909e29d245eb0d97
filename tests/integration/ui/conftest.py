"""The web UI in a real browser: Debian's Chromium driven by Playwright, a real manager.

One browser for the session, a fresh context (cookies, storage) per test. A test module
declares `WORKFLOWS` (YAML, `{p}` standing for its queue prefix) and optionally `MANAGER_ENV`;
its tests share one manager (`site`), and play the workers themselves (`site.take`,
`site.answer`) so each step's moment is theirs to choose. Each test's page records CSP
violations and script errors, and the test fails if there are any.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aio_pika
import httpx
import pytest

from ..conftest import System, _delete_queues
from ..harness import start_manager

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Before any page script: keep every CSP violation where the test can read it.
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(e.violatedDirective + " " + e.blockedURI);
});
"""


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Any]:
    """Headless Chromium; skips locally when it is not installed, fails in CI (CI=true)."""
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing (scripts/setup.sh installs it: apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        yield chromium
        await chromium.close()


@pytest.fixture
async def page(browser: Any) -> AsyncIterator[Any]:
    """A page in a fresh context at 1280x800; fails the test on a CSP violation or JS error."""
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(15_000)
    await context.add_init_script(RECORD_VIOLATIONS)
    tab = await context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    tab.on(
        "console",
        lambda message: (
            errors.append(f"console: {message.text}")
            if message.type == "error" and "Content Security Policy" in message.text
            else None
        ),
    )
    yield tab
    if not tab.is_closed() and tab.url.startswith("http"):
        violations = await tab.evaluate("window.__cspViolations || []")
        errors.extend(f"CSP violation: {v}" for v in violations)
    await context.close()
    assert errors == [], errors


@pytest.fixture(scope="module")
async def site(
    request: pytest.FixtureRequest, amqp_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[System]:
    """A manager serving the module's WORKFLOWS, shared by its tests; no worker process."""
    prefix = "t" + uuid.uuid4().hex[:12]
    folder = tmp_path_factory.mktemp("ui")
    config = folder / "workflows.yaml"
    config.write_text(request.module.WORKFLOWS.replace("{p}", prefix))
    env = getattr(request.module, "MANAGER_ENV", None)
    db = folder / "wm.db"
    manager = await start_manager(config, f"{prefix}.wm", amqp_url, db, env=env)
    connection = await aio_pika.connect(amqp_url)
    channel = await connection.channel()
    http = httpx.AsyncClient(base_url=manager.api_url, timeout=10)
    system = System(prefix, manager, [], channel, http, config, db, amqp_url, (), env)
    yield system
    await system.http.aclose()
    code = await system.manager.process.stop()
    await _delete_queues(channel, system)
    await connection.close()
    assert code == 0, f"manager exited with {code}:\n{system.manager.process.output}"


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    """Where a test leaves files to look at (screenshots): $WM_ARTIFACTS, else its tmp_path."""
    folder = Path(os.environ.get("WM_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder
