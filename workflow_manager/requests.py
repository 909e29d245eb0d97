"""The requests of the HTTP API and the CLI (and the scheduler's firings) to the orchestrator.

`ApiRequests`: submit a job, find a job (in memory, ended in the journal, or run by another
manager), cancel, retry or signal one; its `schedules` (`ScheduleRequests`) fire, pause and
tell about a schedule. Each request becomes an
engine event run through the same pipeline as a delivery (`Pipeline.process`); the few changes
of memory a request makes outside it are the pipeline's named ones (`Pipeline.replay_for_retry`,
`let_go`, `catch_up`). The errors it raises are the API's (`SubmitError`s, `JobNotFound`,
`JobConflict`, `NotOwner`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from payload_refs.errors import PayloadRefError
from workflow_manager.bulkrequests import BulkRequests
from workflow_manager.config import Workflow
from workflow_manager.engine import (
    CancelRequested,
    EngineState,
    Job,
    JobSubmitted,
    PauseRequested,
    RetryRequested,
    SignalReceived,
    StepStatus,
    canonical_uuid,
    replay,
)
from workflow_manager.engine.snapshot import restore
from workflow_manager.engine.uniqueness import key_taken
from workflow_manager.errors import (
    Debounced,
    DuplicateJob,
    DuplicateKey,
    InvalidFork,
    InvalidJobId,
    InvalidPayload,
    JobConflict,
    JobNotFound,
    NotOwner,
    SubmitError,
    UnknownWorkflow,
)
from workflow_manager.forks import fork_submission
from workflow_manager.journal import JobRow, Journal
from workflow_manager.notices import debounced_reason, duplicate_reason
from workflow_manager.recorder import to_event
from workflow_manager.schedulerequests import ScheduleRequests
from workflow_manager.traces import TraceParent, new_trace_id

if TYPE_CHECKING:
    from workflow_manager.cluster.ours import OurTrees
    from workflow_manager.cluster.ownership import Ownership
    from workflow_manager.payloads.stage import PayloadRefs
    from workflow_manager.pipeline import Pipeline
    from workflow_manager.settings import ManagerSettings

__all__ = ["ApiRequests"]

log = logging.getLogger(__name__)

_REJECTIONS: dict[str, type[SubmitError]] = {
    "invalid-id": InvalidJobId,
    "unknown-workflow": UnknownWorkflow,
    "invalid-payload": InvalidPayload,
    "invalid-fork": InvalidFork,
}


class ApiRequests:
    """The API's requests of the orchestrator: jobs submitted, found, cancelled, retried and
    signalled; schedules fired, paused and asked about (`schedules`); bulk actions asked for
    and about (`bulks`)."""

    def __init__(
        self,
        pipeline: Pipeline,
        trees: OurTrees,
        workflows: Mapping[str, Workflow],
        settings: ManagerSettings,
        journal: Journal,
        clock: Callable[[], float],
        ownership: Ownership | None = None,
        payloads: PayloadRefs | None = None,
    ) -> None:
        self.workflows = workflows
        self._payloads = payloads
        self._pipeline = pipeline
        self._trees = trees
        self._settings = settings
        self._journal = journal
        self._now = clock
        self._ownership = ownership
        self.schedules = ScheduleRequests(
            pipeline, trees, workflows, journal, clock, self.finished_row, ownership
        )
        self.bulks = BulkRequests(pipeline, trees, journal, clock, ownership)

    def __repr__(self) -> str:
        return f"<ApiRequests workflows={len(self.workflows)}>"

    async def submit(
        self,
        workflow: str,
        payload: Any,
        job_id: str | None = None,
        trace: TraceParent | None = None,
        priority: int = 0,
        *,
        not_before: float | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        """Start a job (the HTTP API's way in); returns its id or raises a SubmitError.

        `meta` is the job's metadata (sent on each of its requests as `x-meta`).

        The job joins `trace` (the caller's trace context), else it starts a trace of its own.
        `priority` (0-9, higher first) orders it wherever the manager holds work back.
        With a `not_before` later than now it is scheduled, and starts then.
        """
        chosen = job_id is not None  # a new id of ours cannot name an existing job
        job_id = job_id if job_id is not None else self._trees.new_job_id()
        canonical = canonical_uuid(job_id)
        trace_id, parent = (trace.trace_id, trace.span_id) if trace else (new_trace_id(), None)
        submitted = JobSubmitted(
            job_id, workflow, payload, self._now(), trace_id=trace_id, trace_parent=parent,
            priority=priority,
            not_before=not_before,
            meta=meta,
        )  # fmt: skip
        submitted, _ = await self._trees.placed(self._pipeline.pinned(submitted), chosen)
        if canonical is not None and submitted.partition is not None:
            self._trees.require_owner(canonical, submitted.partition)
        state = self._pipeline.state
        if (
            chosen
            and canonical is not None
            and (
                canonical in state.jobs
                # A completed child out of memory: its row may not be written yet.
                or state.gone.root_of(canonical) is not None
                or await self.finished_row(canonical) is not None
            )
        ):
            raise DuplicateJob(f"a job with id {canonical} already exists")
        if self._payloads is not None:
            try:
                submitted = await self._payloads.submission(submitted)
            except PayloadRefError as exc:
                raise InvalidPayload(f"PayloadRefError: {exc}") from None
        await self._submitted(submitted)
        return canonical or job_id

    async def _submitted(self, submitted: JobSubmitted) -> None:
        """Run a submission through the pipeline; a SubmitError if the engine refused it."""
        result, sending = await self._pipeline.process(submitted)
        if result.rejected is not None:
            rejected = result.rejected
            raise _REJECTIONS.get(rejected.kind, SubmitError)(rejected.reason)
        if result.duplicate is not None:
            raise DuplicateKey(duplicate_reason(result.duplicate), result.duplicate.existing)
        if result.debounced is not None:  # journaled: the window's job does its work
            await sending
            raise Debounced(debounced_reason(result.debounced), result.debounced.existing)
        await sending

    async def payload_signal(self, signal: SignalReceived) -> SignalReceived:
        """A signal with its large values stored and its rules' references read in
        (`PayloadRefs`); PayloadRefError when one cannot be read."""
        if self._payloads is None:
            return signal
        job = self._pipeline.state.jobs.get(signal.job_id)
        return await self._payloads.signal(signal, job.workflow if job else None)

    async def fork(
        self,
        source_id: str,
        step: str,
        *,
        input: dict[str, Any] | None = None,
        definition: str = "current",
        children: str = "failed",
        job_id: str | None = None,
    ) -> str:
        """Fork a completed, failed or cancelled job from `step`: a new job (its id returned)
        that keeps the source's outputs before that step and runs the rest, `step` with
        `input` if given. `definition` "pinned" runs the source's definition, "current" the
        workflow's current one; `children` ("failed" or "all") what a task step runs again.

        The source is read here, from memory or the journal, into the fork's seed: the engine
        decides the rest (`workflow_manager.engine.forking`). JobNotFound, JobConflict (the
        source runs, or is a child) or a SubmitError (InvalidFork: no such step) otherwise.
        """
        canonical = canonical_uuid(source_id) or source_id
        source = await self.find_job(canonical, replay_foreign=True)
        if source is None:
            raise JobNotFound(f"no job {canonical}")
        if source.parent is not None:
            raise JobConflict(
                f"job {source.id} is a child of job {source.parent.job_id}; fork that job"
            )
        if not source.is_settled:
            raise JobConflict(
                f"job {source.id} is {source.status}; only a completed, failed or cancelled job "
                "can be forked (once its on_error / on_cancel steps are done)"
            )
        submitted = await fork_submission(
            self._journal, source, step, self._now(), input=input, definition=definition,
            children=children, job_id=job_id or self._trees.new_job_id(),
        )  # fmt: skip
        named = job_id is not None
        submitted, _ = await self._trees.placed(self._pipeline.pinned(submitted), named)
        await self._submitted(submitted)
        log.info("job %s forked from job %s at step %s", submitted.job_id, source.id, step)
        return submitted.job_id

    async def find_job(self, job_id: str, *, replay_foreign: bool = False) -> Job | None:
        """A job in memory, or a finished one restored from its journal snapshot.

        Partitioned, a running job (a child too) of another manager's partition is live in
        that manager's memory: NotOwner, so the API asks it; with `replay_foreign` (it cannot
        be asked now), the job as its committed journal rows make it.
        """
        job = self._pipeline.state.jobs.get(job_id)
        if job is not None:
            return job
        row = self._pipeline.ended.get(job_id) or await self._journal.job(job_id)
        if row is None or row.snapshot is None:
            return None if self._ownership is None else await self._foreign(job_id, replay_foreign)
        workflow = self._pipeline.state.definitions.get(row.definition)
        if workflow is None:
            stored = await self._journal.definitions([row.definition])
            if row.definition not in stored:
                return None
            workflow = Workflow.model_validate_json(stored[row.definition][1])
        return restore(row.snapshot, workflow)

    async def _foreign(self, job_id: str, replay_foreign: bool) -> Job | None:
        """A job not in our memory nor ended in the journal: NotOwner when another manager
        runs its tree (with no partition when no job has that id here: a running child that
        has written nothing yet may be another manager's); with `replay_foreign`, the job as
        the journal has it instead."""
        tree = await self._trees.tree_of(job_id)
        if tree is None:
            if replay_foreign:
                return None
            raise NotOwner(f"no job {job_id}", None)
        if self._trees.owns(*tree):
            return None
        if not replay_foreign:
            self._trees.require_owner(*tree)
        return await self._replayed(tree[0], job_id)

    async def _replayed(self, root_id: str, job_id: str) -> Job | None:
        """A job of a tree another manager runs, as its committed journal rows make it:
        replayed through the same engine into a state of its own (ours is left alone)."""
        stored = await self._journal.definitions()
        pinned = [Workflow.model_validate_json(text) for _, text in stored.values()]
        state = EngineState.from_workflows(
            self.workflows,
            pinned,
            self._settings.max_running_jobs,
            self._settings.max_fanout_bytes,
            self._settings.job_limits,
        )
        replay(state, map(to_event, await self._journal.replay_rows([root_id])))
        return state.jobs.get(job_id)

    async def finished_row(self, job_id: str) -> JobRow | None:
        """The journal row of a job that has ended and left memory, if `job_id` names one."""
        canonical = canonical_uuid(job_id)
        if canonical is None or canonical in self._pipeline.state.jobs:
            return None
        return self._pipeline.ended.get(canonical) or await self._journal.job(canonical)

    async def workflow_jobs(self, name: str, finished_since: float) -> dict[str, list[str]]:
        """Top-level jobs of a workflow by status (finished ones since `finished_since`)."""
        return await self._journal.workflow_jobs(name, finished_since)

    async def cancel(self, job_id: str) -> Job:
        """Cancel a scheduled or running job; JobNotFound or JobConflict (it ended) otherwise."""
        canonical = canonical_uuid(job_id) or job_id
        await self._require_owner_of(canonical)
        row = await self.finished_row(canonical)
        if row is not None:
            raise JobConflict(
                f"job {canonical} is already {row.status}; only a running job can be cancelled"
            )
        return await self._control(CancelRequested(canonical, self._now()))

    async def pause(self, job_id: str, paused: bool) -> Job:
        """Pause a running job (`paused`) or resume a paused one; JobNotFound or JobConflict
        (it ended, or is paused already, or is not) otherwise."""
        canonical = canonical_uuid(job_id) or job_id
        await self._require_owner_of(canonical)
        row = await self.finished_row(canonical)
        if row is not None:
            action = "paused" if paused else "resumed"
            raise JobConflict(
                f"job {canonical} is already {row.status}; only a running job can be {action}"
            )
        return await self._control(PauseRequested(canonical, paused, self._now()))

    async def retry(self, job_id: str) -> Job:
        """Run a failed job again from where it failed; JobNotFound or JobConflict otherwise."""
        canonical = canonical_uuid(job_id) or job_id
        await self._require_owner_of(canonical)
        row = await self.finished_row(canonical)
        if row is not None and row.root_id not in self._pipeline.state.jobs:
            # Its submission would replay as a duplicate while another job holds its key.
            self._require_key_free(row)
            # It has left memory: replay its journal to bring it back, then retry it.
            rows = await self._journal.replay_rows([row.root_id])
            if row.root_id not in self._pipeline.state.jobs:
                await self._pipeline.replay_for_retry(rows, canonical)
        return await self._control(RetryRequested(canonical, self._now()))

    def _require_key_free(self, row: JobRow) -> None:
        """JobConflict when another unfinished job holds the unique key of job `row` (a
        top-level job that left memory), as the engine refuses a retry of one in memory."""
        key = (row.snapshot or {}).get("unique_key") if row.parent_id is None else None
        if isinstance(key, str):
            reason = key_taken(self._pipeline.state, row.workflow, key, row.id)
            if reason is not None:
                raise JobConflict(reason)

    async def signal(self, job_id: str, step: str, payload: dict[str, Any]) -> str:
        """Signal a waiting step; returns "completed" (it was waiting) or "kept" (it will be,
        and completes when reached). JobNotFound or JobConflict (with why) otherwise."""
        canonical = canonical_uuid(job_id) or job_id
        await self._require_owner_of(canonical)
        reason = await self.finished_reason(canonical)
        if reason is not None:
            raise JobConflict(reason)
        # Read before: a job that completes leaves memory.
        job = self._pipeline.state.jobs.get(canonical)
        signalled = SignalReceived(canonical, step, payload, self._now())
        try:
            signalled = await self.payload_signal(signalled)
        except PayloadRefError as exc:
            raise JobConflict(f"PayloadRefError: {exc}") from None
        result, sending = await self._pipeline.process(signalled)
        refused = result.refused
        if refused is not None or job is None:
            reason = refused.reason if refused else f"no job {canonical}"
            kind = refused.kind if refused else "not-found"
            raise (JobNotFound if kind == "not-found" else JobConflict)(reason)
        await sending
        return "kept" if job.steps[step].status is StepStatus.PENDING else "completed"

    async def _require_owner_of(self, job_id: str) -> None:
        """NotOwner unless `job_id`'s tree is ours (no read when unpartitioned or in memory);
        with no partition when no job has that id here (another manager may run it: a running
        child that has written nothing yet)."""
        if self._ownership is None or job_id in self._pipeline.state.jobs:
            return
        tree = await self._trees.tree_of(job_id)
        if tree is None:
            raise NotOwner(f"no job {job_id}", None)
        self._trees.require_owner(*tree)

    async def _control(self, event: CancelRequested | RetryRequested | PauseRequested) -> Job:
        job = self._pipeline.state.jobs.get(event.job_id)  # first: a settled job leaves memory
        result, sending = await self._pipeline.process(event)
        refused = result.refused
        if refused is not None or job is None:
            if job is not None and job.parent is None:
                # Brought back for a retry it cannot have: it goes again.
                await self._pipeline.let_go(job.id)
            reason = refused.reason if refused else f"no job {event.job_id}"
            kind = refused.kind if refused else "not-found"
            raise (JobNotFound if kind == "not-found" else JobConflict)(reason)
        await sending
        return job

    async def finished_reason(self, job_id: str) -> str | None:
        """Why a signal cannot be for `job_id`: it ended and left memory; None when it did not."""
        row = await self.finished_row(job_id)
        return None if row is None else f"job {row.id} is already {row.status}"
