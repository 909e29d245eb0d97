"""The engine's rules, registered in one list.

At each extension point (`workflow_manager.engine.extension.Part`) the core calls the parts
that override it, in the order of `PARTS`: a submission is checked against its payload
contract, then its schedule, then its debounce window, then its unique key; a ready step's
`when` is read before its input contract; and so on. Adding a rule: write a `Part` that
overrides the points it needs, and add it here. The comment beside each part names the points
it takes part in.
"""

from __future__ import annotations

from workflow_manager.engine.admission import Admission
from workflow_manager.engine.compensation import Compensations
from workflow_manager.engine.conditions import Conditions
from workflow_manager.engine.contracts import Contracts
from workflow_manager.engine.deadlines import JobDeadlines, Retries
from workflow_manager.engine.debouncing import Debouncing
from workflow_manager.engine.delays import DelayedStarts
from workflow_manager.engine.extension import Parts
from workflow_manager.engine.fairshares import FairShares
from workflow_manager.engine.fallbacks import Fallbacks
from workflow_manager.engine.gates import StepGates
from workflow_manager.engine.jobrates import JobRates
from workflow_manager.engine.joins import Joins
from workflow_manager.engine.metadata import Metadata
from workflow_manager.engine.pausing import Pauses
from workflow_manager.engine.rates import StepRates
from workflow_manager.engine.reducing import Reducers
from workflow_manager.engine.scheduling import Schedules
from workflow_manager.engine.uniqueness import UniqueJobs
from workflow_manager.engine.waiting import WaitingSteps

__all__ = ["PARTS"]


PARTS = Parts(
    [
        # a paused job (any workflow; called per step only while one is paused): pause_held,
        # timer_held, cancel_held, job_settled
        Pauses(),
        # when: step_starting_held
        Conditions(),
        # JSON Schemas: submission_refused, step_starting_held, reply_problem, children_refused
        Contracts(),
        # task steps' join (after the contracts: a list is checked before its length):
        # children_refused, child_outlived, tolerates_failed_child, children_decided,
        # job_stopped
        Joins(),
        # x-meta: job_created, reply_problem
        Metadata(),
        # paused schedules, overlap: skip: submission_refused, job_created
        Schedules(),
        # debounce (before unique and admission: a trigger of an open window is answered
        # first): submission_refused, submission_prepared, job_created, job_running,
        # job_settled
        Debouncing(),
        # unique: submission_refused, job_created, retry_refusal, job_revived, job_settled
        UniqueJobs(),
        # fairness (the group a job's held-back work waits in, for admission and step
        # concurrency; a step's own, failing a step whose share cannot be read before its
        # concurrency and rate hold it): submission_refused, job_created, dispatch_held
        FairShares(),
        # compensate: claims_reply, step_completed, child_settled, wind_down_held,
        # retry_refusal, timers CompensationTimeout and CompensationRetry
        Compensations(),
        # not_before: submission_prepared, start_held, cancel_held, timer JobStart
        DelayedStarts(),
        # workflow rate: start_held, cancel_held, job_settled, timer JobRateRelease. A job under
        # concurrency limits takes its slots first and reaches its rate from admission's start
        # (here, before Admission, only so that a cancelled queued job leaves its line first)
        JobRates(),
        # workflow concurrency, max_running_jobs, priorities: submission_prepared, start_held,
        # job_settled, cancel_held, retry_refusal, job_revived, timer JobAdmit
        Admission(),
        # step concurrency: dispatch_held, request_ended, timer StepRelease
        StepGates(),
        # step rate (after step concurrency: a step takes its slot, then waits for its turn):
        # dispatch_held, release_held, dispatched, request_ended, timer RateRelease
        StepRates(),
        # wait: true: step_starting_held, timer StepTimeout (while waiting)
        WaitingSteps(),
        # fallback: failure_held, completion_held
        Fallbacks(),
        # reduce: claims_results, late_child_held, result_held, next_children_held,
        # gathered_held, claims_reply (an earlier batch's late reply), completion_held,
        # failure_held, retry_refusal
        Reducers(),
        # step timeout_s, retries: dispatched, timers StepTimeout and RetryDue
        Retries(),
        # workflow timeout: job_running, job_stopped, timer JobTimeout
        JobDeadlines(),
    ]
)
"""Every rule of the engine, in the order they are called at each point."""
