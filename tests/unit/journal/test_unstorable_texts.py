"""NUL and lone surrogates in every text of a batch, on a real SQLite file and a real PostgreSQL
database: the journal stays healthy, both store the same thing, and lookups by the texts as
they came (sent marks, job ids) find the rows."""

from __future__ import annotations

from tests.unit.journal.helpers import T0, job, replied, submitted
from workflow_manager.journal import Batch, EventRow, Journal

BAD = "\x00\ud800.\udfff"  # NUL, a lone high and a lone low surrogate
SAFE = "\ufffd\ufffd.\ufffd"
JOB_ID = "job" + BAD


def _notice() -> EventRow:
    meta = {"queue": "r" + BAD, "cid": JOB_ID, "headers": {"x-status": "failed" + BAD}}
    return EventRow(
        at=T0, kind="notified", job_id=JOB_ID, root_id=JOB_ID, body=b"{}", meta=meta,
        msg_id=f"notice:{JOB_ID}:r{BAD}",
    )  # fmt: skip


async def test_every_text_of_a_batch_is_journaled_on_both_journals(journal: Journal):
    payload = {"text": "hi" + BAD, BAD: [BAD]}
    error = {"step": "s" + BAD, "error": "x-error said" + BAD, "meta": {"k": BAD}}
    stray = replied("stray" + BAD, step="step" + BAD, meta={"x-error": BAD})
    row = job(JOB_ID, status="failed", finished_at=T0, payload=payload, error=error)
    await journal.append(
        Batch(events=[submitted(JOB_ID), stray, _notice(), submitted("ok")], jobs=[row])
    )
    await journal.append(Batch(sent=[(_notice().msg_id or "", T0 + 1)]))

    assert journal.failure is None
    assert await journal.pending_outbound() == []
    stored = await journal.job(JOB_ID)
    assert stored is not None
    assert (stored.id, stored.payload, stored.error) == ("job" + SAFE, payload, error)
    rows = await journal.events_of(JOB_ID)
    assert [r.kind for r in rows] == ["submitted", "notified"]
    assert rows[1].meta == _notice().meta
    assert rows[1].msg_id == f"notice:job{SAFE}:r{SAFE}"
    (back,) = await journal.events_of("stray" + BAD)
    assert (back.job_id, back.step, back.meta) == ("stray" + SAFE, "step" + SAFE, {"x-error": BAD})
    assert [r.kind for r in await journal.events_of("ok")] == ["submitted"]
