"""`workflow-manager test`: a workflow file run in a `Simulation` with the steps' answers given
in a fixtures file (YAML or JSON), checked against the expectations the file states.

    job:                                  # the job to start
      workflow: book-word-counts
      payload: {text: "a b c"}
    steps:                                # answers per step (or queue), one per attempt;
      count:                              # the last one answers every later attempt
        - error: "worker crashed"         # attempt 1 fails with this message
        - output: {count: 3}              # attempt 2 answers this object
          after: 30                       # ... 30 virtual seconds after it was sent
      flaky: [{no_reply: true}]           # never answered: its timeout decides
    signals:                              # sent in order once the run is idle
      - {step: approve, payload: {ok: true}}
    advance: 86400                        # then move the clock a day on (schedules fire)
    expect:
      status: completed
      result: {count: 3}
      steps: {count: {status: completed, attempts: 2}}

Every step the job sends a request for must have answers; `expect` may name any subset.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from workflow_manager.engine import Dispatch
from workflow_manager.errors import ConfigError
from workflow_manager.testing.handlers import Answer
from workflow_manager.testing.simulation import START, Simulation
from workflow_manager.testing.views import JobView

__all__ = ["Fixtures", "load_fixtures", "run_fixtures", "check", "run_table"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StepAnswer(_Strict):
    """One attempt's answer: an output object, an error message, or no answer at all."""

    output: dict[str, Any] | None = None
    error: str | None = None
    no_reply: bool = False
    after: float = Field(default=0.0, ge=0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _one_kind(self) -> StepAnswer:
        given = [self.output is not None, self.error is not None, self.no_reply]
        if sum(given) > 1:
            raise ValueError("give one of output, error or no_reply")
        return self


class JobSpec(_Strict):
    """The job the run starts."""

    workflow: str
    payload: dict[str, Any] = Field(default_factory=dict)
    meta: dict[str, Any] | None = None


class SignalSpec(_Strict):
    """A signal sent to the job's waiting step once the run is idle."""

    step: str
    payload: dict[str, Any] = Field(default_factory=dict)


class StepExpectation(_Strict):
    """What a step must have ended as."""

    status: str | None = None
    attempts: int | None = Field(default=None, ge=0)


class Expectations(_Strict):
    """What the run must end as; each field left out is not checked."""

    status: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = None  # a part of the job's error message
    steps: dict[str, StepExpectation] = Field(default_factory=dict)


class Fixtures(_Strict):
    """A fixtures file: the job, the steps' answers, signals, time, and what to expect."""

    job: JobSpec
    steps: dict[str, list[StepAnswer]] = Field(default_factory=dict)
    signals: list[SignalSpec] = Field(default_factory=list)
    advance: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    expect: Expectations = Field(default_factory=Expectations)


def load_fixtures(path: str | Path) -> Fixtures:
    """The fixtures file at `path`; ConfigError naming the file and each problem."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the fixtures file: {exc}") from None
    try:
        data = yaml.safe_load(text)  # JSON is YAML too
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML or JSON: {exc}") from None
    try:
        return Fixtures.model_validate(data)
    except ValidationError as exc:
        problems = [
            f"{path}: {'.'.join(map(str, e['loc'])) or 'the file'}: {e['msg']}"
            for e in exc.errors()
        ]
        raise ConfigError("\n".join(problems)) from None


def _canned(name: str, answers: Sequence[StepAnswer]) -> Any:
    """A StepCall answering attempt n with `answers[n-1]` (the last one from then on)."""

    async def call(dispatch: Dispatch) -> Answer | None:
        given = answers[min(dispatch.attempt, len(answers)) - 1]
        if given.no_reply:
            return None
        if given.error is not None:
            return Answer(b"", given.error, after=given.after)
        return Answer(json.dumps(given.output or {}).encode(), after=given.after)

    return call


async def run_fixtures(sim: Simulation, fixtures: Fixtures) -> JobView:
    """Run the fixtures' job in `sim` to the end (or until it waits with nothing left to
    send); returns the job."""
    for name, answers in fixtures.steps.items():
        if answers:
            sim.answer_with(name, _canned(name, answers))
    spec = fixtures.job
    job_id = await sim.start(spec.workflow, spec.payload, meta=spec.meta)
    await sim.run_until_idle()
    for signal in fixtures.signals:
        await sim.signal(job_id, signal.step, signal.payload)
        await sim.run_until_idle()
    if fixtures.advance:
        await sim.advance(fixtures.advance)
        await sim.run_until_idle()
    return sim.job(job_id)


def check(job: JobView, expect: Expectations) -> list[str]:
    """Each way `job` differs from `expect`, as a sentence; [] when it meets them all."""
    problems = []
    if expect.status is not None and job.status != expect.status:
        problems.append(f"job status is {job.status}, expected {expect.status}")
    if expect.result is not None and job.result != expect.result:
        problems.append(f"job result is {_json(job.result)}, expected {_json(expect.result)}")
    if expect.error is not None:
        message = str((job.error or {}).get("message", ""))
        if expect.error not in message:
            problems.append(f"job error is {message!r}, expected it to contain {expect.error!r}")
    for name, wanted in expect.steps.items():
        step = job.steps.get(name)
        if step is None:
            problems.append(f"step {name!r} never ran (steps that ran: {', '.join(job.steps)})")
            continue
        if wanted.status is not None and step.status != wanted.status:
            problems.append(f"step {name!r} is {step.status}, expected {wanted.status}")
        if wanted.attempts is not None and len(step.attempts) != wanted.attempts:
            problems.append(
                f"step {name!r} ran {len(step.attempts)} attempt(s), expected {wanted.attempts}"
            )
    return problems


def run_table(jobs: Sequence[JobView], start_at: float = START) -> str:
    """The run as a table: a row per attempt of each job's steps, with virtual times."""
    rows = [("JOB", "STEP", "ATTEMPT", "OUTCOME", "SENT", "ENDED", "MESSAGE")]
    for job in jobs:
        label = job.workflow if job.parent is None else f"  child {job.id[:8]}"
        rows.append((label, "", "", job.status, _at(job.started_at, start_at), "", ""))
        for step in job.steps.values():
            for attempt in step.attempts:
                rows.append(
                    (
                        "", step.name, str(attempt.number), attempt.outcome or step.status,
                        _at(attempt.sent_at, start_at), _at(attempt.ended_at, start_at),
                        (attempt.message or "")[:80],
                    )
                )  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    lines = [
        "  ".join([*(v.ljust(w) for v, w in zip(row, widths, strict=False)), row[6]])
        for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines)


def _at(at: float | None, start_at: float) -> str:
    """A virtual time as seconds since the run began ("+90.0s"), or "-"."""
    return "-" if at is None else f"+{at - start_at:.1f}s"


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
