"""The span exporter: the engine's commands as spans with the derived ids and the real times."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from tests.unit.engine.helpers import JOB, make_state
from workflow_manager.engine import (
    CancelRequested,
    EngineState,
    Event,
    JobSubmitted,
    StepReplied,
    TimerFired,
    apply,
    timers,
)
from workflow_manager.engine.traceids import job_span_id, step_span_id
from workflow_manager.traces.export import SpanRecorder

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
FLOW = """
workflows:
  - name: w
    defaults:
      retries: 1
      retry_backoff: {initial: 1, multiplier: 1, max: 1}
    steps:
      - name: a
      - {name: fan, task: t, depends: [a]}
      - {name: slow, timeout: 5}
      - {name: z, depends: [fan, slow]}
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: work
"""


class Run:
    """The engine and a SpanRecorder on an in-memory exporter, fed each event's commands."""

    def __init__(self, clock_s: float = 100.0) -> None:
        self.state: EngineState = make_state(FLOW)
        self.exporter = InMemorySpanExporter()
        self.spans = SpanRecorder(
            SimpleSpanProcessor(self.exporter), {"OTEL_SERVICE_NAME": "wm-test"}, lambda: clock_s
        )

    def feed(self, event: Event) -> None:
        _, commands = apply(self.state, event)
        self.spans.observe(commands)

    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())


def _hex(number: int, digits: int) -> str:
    return format(number, f"0{digits}x")


def _by_id(spans: list[ReadableSpan]) -> dict[str, ReadableSpan]:
    return {_hex(s.context.span_id, 16): s for s in spans}


def _run_to_the_end() -> tuple[Run, list[str]]:
    run = Run()
    run.feed(JobSubmitted(JOB, "w", {}, 1.0, trace_id=TRACE_ID, trace_parent=CALLER_SPAN))
    run.feed(StepReplied(JOB, "a", b"", 2.0, error="flaky", attempt=1))
    run.feed(TimerFired(timers.retry_due(JOB, "a", 2), 3.0))
    run.feed(StepReplied(JOB, "a", b'{"items": [1]}', 4.0, attempt=2))
    (child,) = run.state.jobs[JOB].steps["fan"].children or []
    run.feed(StepReplied(child, "work", b'{"item": 1}', 5.0, attempt=1))
    run.feed(TimerFired(timers.step_timeout(JOB, "slow", 1), 6.0))  # no reply within 5 s
    run.feed(TimerFired(timers.retry_due(JOB, "slow", 2), 7.0))
    run.feed(StepReplied(JOB, "slow", b"{}", 8.0, attempt=2))
    run.feed(StepReplied(JOB, "z", b"{}", 9.0, attempt=1))
    return run, [JOB, child]


def test_a_job_its_steps_attempts_and_children_make_one_tree_under_the_callers_span():
    run, (job, child) = _run_to_the_end()
    spans = run.finished()
    by_id = _by_id(spans)
    assert {_hex(s.context.trace_id, 32) for s in spans} == {TRACE_ID}
    (root,) = [s for s in spans if s.parent is None or _hex(s.parent.span_id, 16) not in by_id]
    assert _hex(root.context.span_id, 16) == job_span_id(job)
    assert root.parent is not None and _hex(root.parent.span_id, 16) == CALLER_SPAN
    expected = {
        job_span_id(job): ("w", None),
        step_span_id(job, "a", 1): ("a", job_span_id(job)),
        step_span_id(job, "a", 2): ("a", job_span_id(job)),
        step_span_id(job, "fan", 0): ("fan", job_span_id(job)),
        job_span_id(child): ("t", step_span_id(job, "fan", 0)),
        step_span_id(child, "work", 1): ("work", job_span_id(child)),
        step_span_id(job, "slow", 1): ("slow", job_span_id(job)),
        step_span_id(job, "slow", 2): ("slow", job_span_id(job)),
        step_span_id(job, "z", 1): ("z", job_span_id(job)),
    }
    parents = {
        span_id: (s.name, _hex(s.parent.span_id, 16) if s.parent else None)
        for span_id, s in by_id.items()
    }
    assert parents == {**expected, job_span_id(job): ("w", CALLER_SPAN)}
    assert len(spans) == len(expected)
    assert root.resource.attributes["service.name"] == "wm-test"


def test_spans_carry_the_outcome_attributes_and_the_real_times():
    run, (job, child) = _run_to_the_end()
    by_id = _by_id(run.finished())

    def seen(span_id: str) -> tuple[dict, float, float]:
        span = by_id[span_id]
        return dict(span.attributes or {}), span.start_time / 1e9, span.end_time / 1e9

    step = {"workflow": "w", "job.id": job, "job.root_id": job}
    assert seen(step_span_id(job, "a", 1)) == (
        {**step, "step": "a", "attempt": 1, "outcome": "retried"}, 1.0, 2.0
    )  # fmt: skip
    assert seen(step_span_id(job, "a", 2)) == (
        {**step, "step": "a", "attempt": 2, "outcome": "completed"}, 3.0, 4.0
    )  # fmt: skip
    assert seen(step_span_id(job, "slow", 1))[0]["outcome"] == "timeout"
    assert by_id[step_span_id(job, "slow", 1)].status.status_code is StatusCode.ERROR
    assert seen(step_span_id(child, "work", 1))[0] == {
        "workflow": "w", "job.id": child, "job.root_id": job, "step": "work", "attempt": 1,
        "outcome": "completed",
    }  # fmt: skip
    assert seen(job_span_id(job)) == (
        {"workflow": "w", "job.id": job, "job.root_id": job, "outcome": "completed"}, 1.0, 9.0
    )  # fmt: skip
    assert seen(job_span_id(child)) == (
        {
            "workflow": "w", "job.id": child, "job.root_id": job, "outcome": "completed",
            "job.parent_id": job, "task": "t",
        },
        4.0,
        5.0,
    )  # fmt: skip


def test_attempts_out_when_the_job_is_cancelled_end_as_cancelled():
    run = Run(clock_s=1.5)
    run.feed(JobSubmitted(JOB, "w", {}, 1.0, trace_id=TRACE_ID))
    run.feed(CancelRequested(JOB, 3.0))
    by_id = _by_id(run.finished())
    a = by_id[step_span_id(JOB, "a", 1)]
    assert (a.attributes or {})["outcome"] == "cancelled"
    assert (a.start_time / 1e9, a.end_time / 1e9) == (1.5, 3.0)  # sent as the clock said
    assert (by_id[job_span_id(JOB)].attributes or {})["outcome"] == "cancelled"
    assert by_id[job_span_id(JOB)].parent is None  # no caller: the job's span is the root


def test_recovered_jobs_attempts_are_closed_with_their_dispatch_times():
    live = Run()
    live.feed(JobSubmitted(JOB, "w", {}, 1.0, trace_id=TRACE_ID))
    after = Run()  # a restarted manager: it learns of the job from recovery alone
    after.state = live.state
    after.spans.recovered(live.state.jobs.values())
    after.feed(StepReplied(JOB, "a", b'{"items": []}', 2.0, attempt=1))
    span = _by_id(after.finished())[step_span_id(JOB, "a", 1)]
    assert (span.start_time / 1e9, span.end_time / 1e9) == (1.0, 2.0)
