"""The ignored-messages log: the first at INFO, the rest counted, one summary per period."""

from __future__ import annotations

import asyncio
import logging

from workflow_manager.ignoredlog import IgnoredLog


async def test_the_first_is_logged_in_full_the_rest_are_counted_once_per_period(caplog):
    logger = logging.getLogger("test.ignored")
    caplog.set_level(logging.INFO, logger="test.ignored")
    ignored = IgnoredLog(logger, every_s=0.05)
    for n in range(50):
        ignored.ignored(f"job:{n}", "duplicate")
    assert [r.getMessage() for r in caplog.records] == ["ignored job:0: duplicate"]
    await asyncio.sleep(0.1)  # the period is the behaviour under test, not a synchronisation
    (summary,) = caplog.records[1:]
    assert summary.levelno == logging.INFO and "ignored 49 more" in summary.getMessage()
    ignored.ignored("job:x", "late")  # a quiet period has passed: in full again
    assert caplog.records[-1].getMessage() == "ignored job:x: late"
    ignored.close()
    assert len(caplog.records) == 3  # nothing more to count at close


async def test_close_logs_the_count_not_yet_logged(caplog):
    logger = logging.getLogger("test.ignored.close")
    caplog.set_level(logging.INFO, logger="test.ignored.close")
    ignored = IgnoredLog(logger, every_s=60)
    ignored.ignored("a", "dup")
    ignored.ignored("b", "dup")
    ignored.close()
    assert "ignored 1 more" in caplog.records[-1].getMessage()
