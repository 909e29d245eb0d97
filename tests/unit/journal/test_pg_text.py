"""What PostgreSQL's text cannot hold: a NUL from the wire is stored as U+FFFD, and the journal
stays healthy (in SQLite too: one rule for both, workflow_manager/journal/storable.py)."""

from __future__ import annotations

from tests.unit.journal.helpers import replied, submitted
from workflow_manager.journal import Batch


async def test_a_nul_in_a_stray_replys_ids_does_not_fail_the_journal(journal):
    stray = replied("j\x00", step="a\x00b", msg_id="m\x00")
    await journal.append(Batch(events=[stray, submitted("ok")]))

    assert journal.failure is None
    (ok,) = await journal.events_of("ok")
    assert ok.kind == "submitted"
    stored = await journal.events_of("j\x00")
    assert [(row.kind, row.step, row.msg_id) for row in stored] == [
        ("replied", "a\ufffdb", "m\ufffd")
    ]
