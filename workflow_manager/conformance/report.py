"""The kit's report: one line per rule, a summary line, the exit code. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from workflow_manager.conformance.model import Status, Verdict

__all__ = ["Report", "format_verdict", "format_summary", "EXIT_PASSED", "EXIT_FAILED"]

EXIT_PASSED = 0
EXIT_FAILED = 1
_NAME_WIDTH = 21  # the longest rule name ("payload-ref-missing") and two spaces


@dataclass(frozen=True)
class Report:
    """Every rule's verdict for one queue, and how long the run took."""

    queue: str
    verdicts: tuple[Verdict, ...]
    elapsed_s: float

    @property
    def passed(self) -> bool:
        """True when no rule failed (skipped rules do not fail a run)."""
        return all(verdict.status is not Status.FAIL for verdict in self.verdicts)

    @property
    def exit_code(self) -> int:
        """0 when every rule passed or was skipped, 1 when any failed."""
        return EXIT_PASSED if self.passed else EXIT_FAILED

    def verdict(self, rule: str) -> Verdict:
        """The verdict of the rule called `rule`."""
        return next(verdict for verdict in self.verdicts if verdict.rule == rule)


def format_verdict(verdict: Verdict) -> str:
    """`PASS  reply-to        the reply goes to ...`: status, rule name, reason."""
    return f"{verdict.status.value}  {verdict.rule:<{_NAME_WIDTH}}{verdict.reason}"


def format_summary(queue: str, verdicts: Sequence[Verdict], elapsed_s: float) -> str:
    """`queue 'q': 9 passed, 1 failed, 0 skipped in 2.1s: FAIL`."""
    counts = Counter(verdict.status for verdict in verdicts)
    outcome = "FAIL" if counts[Status.FAIL] else "PASS"
    return (
        f"queue {queue!r}: {counts[Status.PASS]} passed, {counts[Status.FAIL]} failed, "
        f"{counts[Status.SKIP]} skipped in {elapsed_s:.1f}s: {outcome}"
    )
