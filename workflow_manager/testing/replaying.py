"""`workflow-manager replay`: run a real job's journaled events through today's engine (with the
definition it ran, or a new one) and say whether the run is the same, or where it diverges.

This is how a definition change is checked against jobs in flight: the journal holds every
event the job received (its submission, each reply, timer, signal, cancel, retry) and every
request the manager sent and how the job ended. Each event is applied again, in order; what
the engine now decides (the requests it sends, how the job ends) must match what the journal
recorded after that event. The first difference is reported with the event that caused it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow_manager.config import Workflow, load_workflows
from workflow_manager.config.joblimits import load_limits
from workflow_manager.engine import (
    Dispatch,
    EngineState,
    JobFinished,
    JobSubmitted,
    apply,
    canonical_uuid,
    jsontext,
)
from workflow_manager.errors import ManagerError
from workflow_manager.journal import REPLAYED_KINDS, EventKind, EventRow, open_journal
from workflow_manager.recovered import to_event

__all__ = ["ReplayReport", "replay_job", "NoSuchJob"]

# What the journal recorded, and the replay decides, after one event: a request sent
# ("request", correlation id, attempt, body) or a top-level job ending ("ended", id, status).
Fact = tuple[str, str, Any, Any]


class NoSuchJob(ManagerError):
    """The journal has no job of that id."""


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """The outcome of a replay: `diverged_at` None when the run is the same."""

    job_id: str
    events: int  # how many journaled events were applied
    diverged_at: str | None = None  # the event that made the difference, in words
    recorded: list[str] = dataclasses.field(default_factory=list)
    replayed: list[str] = dataclasses.field(default_factory=list)

    @property
    def same(self) -> bool:
        """True when every event made the same decisions as when the job ran."""
        return self.diverged_at is None

    def text(self) -> str:
        """The report for a person."""
        if self.same:
            return f"job {self.job_id}: the same run ({self.events} events replayed)"
        lines = [f"job {self.job_id}: diverges at {self.diverged_at}"]
        lines += ["  the journal recorded:", *(f"    {f}" for f in self.recorded or ["nothing"])]
        lines += ["  the replay decides:", *(f"    {f}" for f in self.replayed or ["nothing"])]
        return "\n".join(lines)


async def replay_job(db: str, job_id: str, config: Path | None = None) -> ReplayReport:
    """Replay job `job_id`'s tree from the journal at `db`; with `config`, under the
    definitions of that workflow file instead of the ones the job ran with.

    Raises:
        NoSuchJob: The journal has no such job.
        ConfigError: `config` is not a valid workflow file.
        JournalError: The journal cannot be read.
    """
    today = load_workflows(config) if config is not None else None
    journal = await open_journal(db, create=False)
    try:
        root = await _root_of(journal, job_id)
        rows = await journal.events_of(root, tree=True)
        stored = await journal.definitions()
    finally:
        await journal.close()
    pinned = [Workflow.model_validate_json(text) for _, text in stored.values()]
    limits = load_limits(config) if config is not None else ()  # the file's nested limits
    state = EngineState.from_workflows(today or {}, pinned, limits=limits)
    return compare(root, rows, state, today is not None)


async def _root_of(journal: Any, job_id: str) -> str:
    canonical = canonical_uuid(job_id) or job_id
    row = await journal.job(canonical)
    if row is not None:
        return str(row.root_id)
    latest = await journal.latest_row(canonical)
    if latest is None or latest.root_id is None:
        raise NoSuchJob(f"the journal has no job {job_id}")
    return str(latest.root_id)


def compare(root: str, rows: list[EventRow], state: EngineState, retarget: bool) -> ReplayReport:
    """Apply the replayable `rows` in order, comparing what each decides with the rows the
    journal recorded after it; `retarget`: run submissions on today's definition of their
    workflow instead of the one they were pinned to."""
    applied = 0
    for index, row in enumerate(rows):
        if row.kind not in REPLAYED_KINDS:
            continue
        event = to_event(row)
        if retarget and isinstance(event, JobSubmitted):
            event = dataclasses.replace(event, definition=state.current.get(event.workflow))
        _, commands = apply(state, event)
        applied += 1
        replayed = [_fact_text(f) for f in _decided(commands)]
        recorded = [_fact_text(f) for f in _recorded(rows, index + 1)]
        if replayed != recorded:
            return ReplayReport(root, applied, _event_text(row), recorded, replayed)
    return ReplayReport(root, applied)


def _decided(commands: list[Any]) -> list[Fact]:
    facts: list[Fact] = []
    for command in commands:
        if isinstance(command, Dispatch):
            facts.append(("request", command.correlation_id, command.attempt, command.body))
        elif isinstance(command, JobFinished) and command.parent_id is None:
            facts.append(("ended", command.job_id, command.status, None))
    return facts


def _recorded(rows: list[EventRow], start: int) -> list[Fact]:
    """The requests and endings the journal holds after one event, up to the next event."""
    facts: list[Fact] = []
    for row in rows[start:]:
        if row.kind in REPLAYED_KINDS:
            break
        if row.kind == EventKind.DISPATCHED:
            body = jsontext.loads(row.body or b"{}")
            facts.append(("request", str(row.meta.get("cid")), row.attempt, body))
        elif row.kind == EventKind.FINISHED:
            facts.append(("ended", str(row.job_id), row.meta.get("status"), None))
    return facts


def _fact_text(fact: Fact) -> str:
    kind, subject, detail, body = fact
    if kind == "request":
        return f"request {subject} attempt {detail} with {jsontext.dumps(body).decode()[:200]}"
    return f"job {subject} ends {detail}"


def _event_text(row: EventRow) -> str:
    """The event a row records, as a person would say it."""
    what = {
        EventKind.SUBMITTED: "its submission",
        EventKind.REPLIED: f"the reply of step '{row.step}' attempt {row.attempt}",
        EventKind.TIMER: f"timer {row.meta.get('key')}",
        EventKind.CANCEL: "a cancel request",
        EventKind.RETRY: "a retry request",
        EventKind.SIGNAL: f"a signal to step '{row.step}'",
    }.get(row.kind, row.kind)
    return f"journal row {row.seq} ({what}, job {row.job_id})"
