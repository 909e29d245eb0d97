"""The report: one aligned line per rule, a summary, and the exit code."""

from __future__ import annotations

from workflow_manager.conformance.model import Status, Verdict
from workflow_manager.conformance.report import Report, format_summary, format_verdict
from workflow_manager.conformance.rules import RULES

VERDICTS = (
    Verdict("reply-to", Status.PASS, "the reply goes to reply_to"),
    Verdict("ack-after-reply", Status.FAIL, "the request was lost"),
    Verdict("error-reply", Status.SKIP, "no --failing-input given"),
)


def test_each_line_starts_with_the_status_and_the_rule_name_in_a_column():
    lines = [format_verdict(verdict) for verdict in VERDICTS]
    assert lines == [
        "PASS  reply-to             the reply goes to reply_to",
        "FAIL  ack-after-reply      the request was lost",
        "SKIP  error-reply          no --failing-input given",
    ]


def test_the_column_fits_the_longest_rule_name():
    longest = max((rule.name for rule in RULES), key=len)
    line = format_verdict(Verdict(longest, Status.PASS, "why"))
    assert line == f"PASS  {longest}  why"


def test_the_summary_counts_each_status_and_ends_with_the_outcome():
    assert format_summary("q", VERDICTS, 2.04) == (
        "queue 'q': 1 passed, 1 failed, 1 skipped in 2.0s: FAIL"
    )
    assert format_summary("q", VERDICTS[:1], 0.5).endswith(
        "1 passed, 0 failed, 0 skipped in 0.5s: PASS"
    )


def test_any_fail_makes_exit_code_1_and_skips_do_not():
    assert Report("q", VERDICTS, 1.0).exit_code == 1
    passing = Report("q", (VERDICTS[0], VERDICTS[2]), 1.0)
    assert (passing.passed, passing.exit_code) == (True, 0)
    assert passing.verdict("error-reply").status is Status.SKIP
