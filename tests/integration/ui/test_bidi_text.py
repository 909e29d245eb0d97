"""A value cannot reorder what the page shows: a right-to-left override (U+202E) in a payload
or a step's output is shown as the escape `\\u202E`, and the text after it stays in reading
order, as Chromium lays it out. A worker's `x-error` sent as an AMQP table shows as JSON."""

from __future__ import annotations

import uuid

RLO = "\u202e"
TAIL = "abcdef"  # laid out f..a, right to left, after an override

WORKFLOWS = """
workflows:
  - name: mirror
    steps:
      - {name: speak, queue: "{p}.speak"}
      - {name: trip, queue: "{p}.trip", depends: [speak]}
"""

# The x positions of the characters of `tail` in the first text node under `selector` that
# holds it, in the order they come in the text.
POSITIONS = """([selector, tail]) => {
  const root = document.querySelector(selector);
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const at = node.data.indexOf(tail);
    if (at < 0) continue;
    return [...tail].map((_, i) => {
      const range = document.createRange();
      range.setStart(node, at + i);
      range.setEnd(node, at + i + 1);
      return range.getBoundingClientRect().left;
    });
  }
  return null;
}"""


async def shown_in_order(page, selector: str) -> bool:
    """True when TAIL's characters are laid out left to right under `selector`."""
    xs = await page.evaluate(POSITIONS, [selector, TAIL])
    assert xs is not None, f"{TAIL!r} is not shown in {selector}"
    return all(a < b for a, b in zip(xs, xs[1:], strict=False))


async def test_an_override_in_payload_and_output_is_shown_escaped_and_in_order(site, page):
    job_id = str(uuid.uuid4())
    await site.trigger("mirror", {"note": f"x{RLO}{TAIL}"}, job_id)
    await site.answer(await site.take("speak"), f'{{"said": "y{RLO}{TAIL}"}}'.encode())
    table = {"code": 7, "why": "disk full", "retry": False}
    await site.answer(await site.take("trip"), b"", **{"x-error": table})

    await page.goto(f"{site.manager.api_url}/ui/job/{job_id}")
    await page.wait_for_selector('[data-job-status="failed"]')
    payload = await page.text_content(".data-grid pre")
    assert RLO not in payload and f"x\\u202E{TAIL}" in payload, payload
    assert await shown_in_order(page, ".data-grid pre")

    await page.click('[data-step="speak"]')
    panel = page.locator("#step-panel")
    await panel.locator("h2", has_text="speak").wait_for()
    output = await panel.text_content()
    assert RLO not in output and f"y\\u202E{TAIL}" in output, output
    assert await shown_in_order(page, "#step-panel")

    await page.click('[data-step="trip"]')
    await panel.locator("h2", has_text="trip").wait_for()
    error = await panel.locator('[data-field="error"]').text_content()
    # JSON, not a Python repr ({'code': 7, ...}); the keys in the order the table came.
    assert all(part in error for part in ('{"code": 7', '"why": "disk full"', '"retry": false')), (
        error
    )
