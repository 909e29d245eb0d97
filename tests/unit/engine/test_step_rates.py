"""Step rate limits: at most N requests of a step started in any window of `per` seconds."""

from __future__ import annotations

import heapq
import uuid

from tests.unit.engine.helpers import of_type, workflows
from workflow_manager.engine import (
    CancelRequested,
    CancelTimer,
    Dispatch,
    EngineState,
    Event,
    JobSubmitted,
    RateHistory,
    RateStart,
    StartTimer,
    StepReplied,
    StepStatus,
    StepThrottled,
    TimerFired,
    apply,
    replay,
)

RATED = """
workflows:
  - name: w
    steps:
      - name: call
        rate: {limit: 2, per: 10}
"""

KEYED = """
workflows:
  - name: w
    steps:
      - name: call
        rate: {limit: 1, per: 10, key: account}
"""

FAIR = """
workflows:
  - name: w
    fairness: {key: tenant}
    steps:
      - name: call
        rate: {limit: 1, per: 10}
"""

BOTH = """
workflows:
  - name: w
    steps:
      - name: call
        concurrency: 1
        rate: {limit: 2, per: 10}
"""


class Clock:
    """A live engine run on a virtual clock: timers fire when the clock passes them."""

    def __init__(self, text: str) -> None:
        self.definitions = workflows(text)
        self.state = self.fresh()
        self.events: list[Event] = []
        self.now = 0.0
        self.timers: dict[str, float] = {}
        self.sent: list[tuple[float, str, int]] = []  # (at, job name, attempt) of each dispatch
        self.names: dict[str, str] = {}  # job id -> the name a test gave it

    def fresh(self) -> EngineState:
        return EngineState.from_workflows(self.definitions)

    def do(self, event: Event) -> list:
        self.events.append(event)
        commands = apply(self.state, event)[1]
        for command in commands:
            if isinstance(command, StartTimer):
                self.timers[command.key] = command.due_at
            elif isinstance(command, CancelTimer):
                self.timers.pop(command.key, None)
            elif isinstance(command, Dispatch):
                self.sent.append((self.now, self.names[command.job_id], command.attempt))
        return commands

    def at(self, when: float) -> None:
        """Move the clock to `when`, firing every timer due by then in order."""
        while True:
            due = [(at, key) for key, at in self.timers.items() if at <= when]
            if not due:
                break
            at, key = heapq.nsmallest(1, due)[0]
            del self.timers[key]
            self.now = max(self.now, at)
            self.do(TimerFired(key, self.now))
        self.now = max(self.now, when)

    def id(self, name: str) -> str:
        job_id = str(uuid.uuid5(uuid.NAMESPACE_URL, name))
        self.names[job_id] = name
        return job_id

    def job(self, name: str):
        return self.state.jobs[self.id(name)]

    def submit(self, name: str, payload: dict | None = None, priority: int = 0) -> list:
        job_id = self.id(name)
        return self.do(JobSubmitted(job_id, "w", payload or {}, self.now, priority=priority))


def _starts(clock: Clock) -> list[tuple[float, str]]:
    return [(at, job) for at, job, _ in clock.sent]


def test_starts_over_the_limit_wait_for_the_window_and_go_in_turn():
    clock = Clock(RATED)
    for i, job in enumerate("abcde"):
        clock.now = i * 0.1
        clock.submit(job)
    assert _starts(clock) == [(0.0, "a"), (0.1, "b")]
    run = clock.job("c").steps["call"]
    assert run.status is StepStatus.THROTTLED
    assert run.throttled_until == 10.0
    clock.at(9.999)
    assert len(clock.sent) == 2
    clock.at(30.0)
    assert _starts(clock) == [
        (0.0, "a"), (0.1, "b"), (10.0, "c"), (10.1, "d"), (20.0, "e"),
    ]  # fmt: skip


def test_a_throttled_step_is_reported_with_when_it_may_go():
    clock = Clock(RATED)
    clock.submit("a")
    clock.submit("b")
    clock.now = 4.0
    throttled = of_type(clock.submit("c"), StepThrottled)
    assert [(t.job_id, t.step, t.at, t.until) for t in throttled] == [
        (clock.id("c"), "call", 4.0, 10.0)
    ]


def test_no_window_of_per_seconds_ever_holds_more_than_limit_starts():
    clock = Clock(RATED)
    for i in range(12):
        clock.now = i * 1.5
        clock.submit(f"j{i:02}")
    clock.at(200.0)
    times = [at for at, _ in _starts(clock)]
    assert len(times) == 12
    for start in times:
        assert sum(start <= t < start + 10.0 for t in times) <= 2


def test_keys_have_windows_of_their_own():
    clock = Clock(KEYED)
    clock.submit("a1", {"account": "a"})
    clock.submit("b1", {"account": "b"})
    clock.submit("a2", {"account": "a"})
    clock.submit("none", {})
    assert [job for _, job in _starts(clock)] == ["a1", "b1", "none"]
    assert clock.job("a2").steps["call"].status is StepStatus.THROTTLED


def test_higher_priority_goes_first_and_fairness_takes_turns_across_keys():
    clock = Clock(RATED.replace("limit: 2", "limit: 1"))
    clock.submit("first")
    clock.submit("low")
    clock.submit("high", priority=7)
    clock.at(25.0)
    assert [job for _, job in _starts(clock)] == ["first", "high", "low"]

    clock = Clock(FAIR)
    clock.submit("a0", {"tenant": "a"})
    for i in range(1, 4):
        clock.submit(f"a{i}", {"tenant": "a"})
    clock.submit("b1", {"tenant": "b"})
    clock.at(25.0)
    assert [job for _, job in _starts(clock)] == ["a0", "b1", "a1"]


def test_a_cancelled_throttled_step_leaves_the_line_and_the_next_takes_its_turn():
    clock = Clock(RATED.replace("limit: 2", "limit: 1"))
    clock.submit("a")
    clock.submit("b")
    clock.submit("c")
    assert f"rate:{clock.id('b')}:call:1" in clock.timers
    clock.do(CancelRequested(clock.id("b"), clock.now))
    assert f"rate:{clock.id('b')}:call:1" not in clock.timers
    assert clock.timers[f"rate:{clock.id('c')}:call:1"] == 10.0
    clock.at(10.0)
    assert [job for _, job in _starts(clock)] == ["a", "c"]
    assert not clock.state.rates["step:w:w:call:null"].waiting


def test_a_good_reply_for_an_earlier_attempt_completes_a_throttled_retry():
    clock = Clock(
        RATED.replace("limit: 2", "limit: 1")
        + "        retries: 1\n        retry_backoff: {initial: 1, multiplier: 1, max: 1}\n"
    )
    clock.submit("a")
    a = clock.id("a")
    clock.do(StepReplied(a, "call", b"{}", clock.now, error="boom", attempt=1))
    clock.at(2.0)  # the retry is due, but the window is full until 10
    assert clock.job("a").steps["call"].status is StepStatus.THROTTLED
    clock.do(StepReplied(a, "call", b"{}", clock.now, attempt=1))  # the first attempt after all
    assert clock.job("a").steps["call"].status is StepStatus.COMPLETED
    assert not clock.timers
    assert not clock.state.rates["step:w:w:call:null"].waiting


def test_with_concurrency_neither_limit_is_exceeded():
    clock = Clock(BOTH)
    for job in "abcdef":
        clock.submit(job)
    out: set[str] = set()
    most = 0
    for step_at in range(1, 60):
        clock.at(float(step_at))
        out |= {job for _, job in _starts(clock)}
        running = [j for j in out if clock.job(j).steps["call"].status is StepStatus.RUNNING]
        most = max(most, len(running))
        for job in running:
            clock.do(StepReplied(clock.id(job), "call", b"{}", clock.now))
    assert most <= 1
    times = [at for at, _ in _starts(clock)]
    assert len(times) == 6
    for start in times:
        assert sum(start <= t < start + 10.0 for t in times) <= 2


def test_an_idle_keyed_window_leaves_memory():
    clock = Clock(KEYED)
    for i in range(5):
        clock.submit(f"k{i}", {"account": i})
    assert len(clock.state.rates) == 5
    clock.now = 100.0
    clock.submit("later", {"account": "x"})
    clock.submit("later2", {"account": "y"})
    clock.submit("later3", {"account": "z"})
    assert set(clock.state.rates) <= {f"step:w:w:call:{key}" for key in ('"x"', '"y"', '"z"', "4")}


def test_a_replay_of_the_journal_rebuilds_the_same_windows():
    clock = Clock(FAIR)
    for i in range(6):
        clock.now = float(i)
        clock.submit(f"j{i}", {"tenant": "ab"[i % 2]}, priority=i % 3)
    clock.at(15.0)
    clock.do(CancelRequested(clock.id("j5"), clock.now))
    clock.at(35.0)
    state = replay(clock.fresh(), clock.events)
    assert state.rates == clock.state.rates
    for job_id, job in clock.state.jobs.items():
        assert state.jobs[job_id].steps["call"].status is job.steps["call"].status


def test_the_history_of_a_restart_holds_the_window_and_counts_each_start_once():
    clock = Clock(KEYED.replace("limit: 1", "limit: 2"))
    clock.submit("a", {"account": "x"})
    clock.submit("b", {"account": "x"})
    history = RateHistory(
        tuple(
            RateStart("w", "call", "call", clock.id(name), 1, {"account": "x"}, None, 0.0)
            for name in ("a", "b")
        ),
        5.0,
    )
    restarted = Clock(KEYED.replace("limit: 1", "limit: 2"))
    restarted.now = 5.0
    restarted.do(history)
    restarted.do(history)  # fed twice: counted once
    assert restarted.state.rates == clock.state.rates
    restarted.submit("other key", {"account": "y"})
    restarted.submit("c", {"account": "x"})
    assert [job for _, job, _ in restarted.sent] == ["other key"]
    restarted.at(10.0)
    assert [(at, job) for at, job, _ in restarted.sent] == [(5.0, "other key"), (10.0, "c")]
    stale = Clock(RATED)
    stale.do(RateHistory(history.starts, 10.0))  # out of the window: nothing to count
    assert not stale.state.rates


def test_a_recovery_replays_the_running_jobs_dispatches_counted_in_its_history():
    clock = Clock(RATED)
    clock.submit("a")
    clock.submit("b")
    history = RateHistory(
        tuple(
            RateStart("w", "call", "call", clock.id(name), 1, {}, None, 0.0)
            for name in ("a", "b")
        ),
        5.0,
    )
    state = clock.fresh()
    apply(state, history)  # as `Recovery.state` does: the history, then the replay
    replay(state, clock.events)
    for name in ("a", "b"):  # sent in the live run: running, not throttled a second time
        assert state.jobs[clock.id(name)].steps["call"].status is StepStatus.RUNNING
    assert not [key for key in state.timers if key.startswith("rate:")]


def test_a_release_timer_that_fires_early_waits_for_its_time_again():
    clock = Clock(RATED.replace("limit: 2", "limit: 1"))
    clock.submit("a")
    clock.submit("b")
    key = f"rate:{clock.id('b')}:call:1"
    del clock.timers[key]
    clock.now = 9.999
    clock.do(TimerFired(key, clock.now))  # a moment before the window has room
    assert clock.job("b").steps["call"].status is StepStatus.THROTTLED
    assert clock.timers[key] == 10.0
    clock.at(10.0)
    assert [(at, job) for at, job, _ in clock.sent] == [(0.0, "a"), (10.0, "b")]
