"""Running the kit as a process (`python -m workflow_manager conformance ...`) and reading its
lines."""

from __future__ import annotations

import asyncio
import re
import sys
from dataclasses import dataclass

from workflow_manager.conformance.rules import RULES

from ..harness import ROOT

LINE = re.compile(r"^(PASS|FAIL|SKIP)  (\S+)\s+(.*)$")
ALL_RULES = {rule.name for rule in RULES}


@dataclass(frozen=True)
class KitRun:
    """The kit's exit code, its verdict per rule and everything it printed."""

    code: int
    verdicts: dict[str, tuple[str, str]]
    output: str

    def with_status(self, status: str) -> set[str]:
        """The rules that got `status`."""
        return {rule for rule, (got, _reason) in self.verdicts.items() if got == status}


async def run_kit(queue: str, *args: str, timeout_s: float = 90) -> KitRun:
    """Run `workflow-manager conformance QUEUE ARGS` as a process."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "workflow_manager", "conformance", queue, *args,
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    text = out.decode()
    verdicts = {}
    for line in text.splitlines():
        if match := LINE.match(line):
            verdicts[match[2]] = (match[1], match[3])
    assert proc.returncode is not None
    return KitRun(proc.returncode, verdicts, text)
