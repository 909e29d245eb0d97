"""Whatever characters and bytes a row holds come back as they went in, on both journals
(PostgreSQL's rows go in with COPY, whose text format escapes tabs, newlines and backslashes)."""

from __future__ import annotations

from workflow_manager.journal import Batch, EventRow

AWKWARD = "tab\there\nnewline\\backslash \\N 'quote\" é 😀 \r end"


async def test_awkward_text_and_every_byte_round_trip(journal):
    body = bytes(range(256)) + b"\\N\t\n"
    rows = [
        EventRow(
            at=1.5 + n, kind="dispatched", job_id="j1", root_id="j1", step=AWKWARD,
            attempt=n, body=body, meta={"headers": {"k": AWKWARD}}, msg_id=f"m{n}{AWKWARD}",
        )  # fmt: skip
        for n in range(3)
    ]
    rows.append(EventRow(at=9.0, kind="replied", job_id="j1", root_id="j1", body=None))
    await journal.append(Batch(events=rows))
    back = await journal.events_of("j1")
    assert [(r.step, r.attempt, r.body, r.meta, r.msg_id, r.at) for r in back] == [
        (r.step, r.attempt, r.body, r.meta, r.msg_id, r.at) for r in rows
    ]
