"""Workflow rate limits: at most N top-level jobs of a workflow started in any `per` seconds;
the others wait (queued) for their turn and are never dropped."""

from __future__ import annotations

import heapq
import uuid

from tests.unit.engine.helpers import of_type, workflows
from workflow_manager.engine import (
    CancelRequested,
    CancelTimer,
    EngineState,
    Event,
    JobQueued,
    JobRateStart,
    JobStarted,
    JobStatus,
    JobSubmitted,
    JobThrottled,
    Quota,
    QuotasSet,
    RateHistory,
    RetryRequested,
    StartTimer,
    StepReplied,
    ThrottleEnded,
    TimerFired,
    apply,
    replay,
)
from workflow_manager.engine.admission import WaitingFor, waiting_for
from workflow_manager.engine.quotas import hashed_partition

RATED = """
workflows:
  - name: w
    rate: {limit: 2, per: 10}
    steps:
      - name: call
"""

KEYED = """
workflows:
  - name: w
    rate: {limit: 1, per: 10, key: meta.tenant}
    steps:
      - name: call
"""

FAIR = """
workflows:
  - name: w
    rate: {limit: 1, per: 10}
    fairness: {key: tenant}
    steps:
      - name: call
"""

LIMITED = """
workflows:
  - name: w
    concurrency: {limit: 1}
    rate: {limit: 2, per: 10}
    steps:
      - name: call
"""

FANNED = """
workflows:
  - name: w
    rate: {limit: 1, per: 10}
    steps:
      - {name: fan, task: t}
    tasks:
      - {name: t, itemListKey: items, steps: [{name: child}]}
"""


class Clock:
    """A live engine run on a virtual clock: timers fire when the clock passes them (a timer
    due now fires at once, as the driver delivers it)."""

    def __init__(self, text: str, partitions: int | None = None) -> None:
        self.definitions = workflows(text)
        self.partitions = partitions
        self.state = self.fresh()
        self.events: list[Event] = []
        self.now = 0.0
        self.timers: dict[str, float] = {}
        self.started: list[tuple[float, str]] = []  # (at, job name) of each top-level start
        self.names: dict[str, str] = {}  # job id -> the name a test gave it

    def fresh(self) -> EngineState:
        return EngineState.from_workflows(self.definitions, partitions=self.partitions)

    def do(self, event: Event) -> list:
        self.events.append(event)
        commands = apply(self.state, event)[1]
        for command in commands:
            if isinstance(command, StartTimer):
                self.timers[command.key] = command.due_at
            elif isinstance(command, CancelTimer):
                self.timers.pop(command.key, None)
            elif isinstance(command, JobStarted) and command.parent_id is None:
                self.started.append((self.now, self.names[command.job_id]))
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

    def submit(self, name: str, payload: dict | None = None, **fields) -> list:
        """Submit job `name` now, and deliver what is due now (a turn given at once)."""
        job_id = self.id(name)
        commands = self.do(JobSubmitted(job_id, "w", payload or {}, self.now, **fields))
        self.at(self.now)
        return commands


def _names(clock: Clock) -> list[str]:
    return [name for _, name in clock.started]


def test_jobs_over_the_limit_wait_queued_and_start_in_turn_none_dropped():
    clock = Clock(RATED)
    for i, name in enumerate("abcde"):
        clock.now = i * 0.1
        clock.submit(name)
    assert clock.started == [(0.0, "a"), (0.1, "b")]
    waiting = clock.job("c")
    assert waiting.status is JobStatus.QUEUED
    assert waiting.throttled_until == 10.0
    assert waiting_for(clock.state, waiting) == WaitingFor("rate", "rate", None, 2, 2, 10.0)
    clock.at(9.999)
    assert len(clock.started) == 2
    clock.at(30.0)
    assert clock.started == [(0.0, "a"), (0.1, "b"), (10.0, "c"), (10.1, "d"), (20.0, "e")]
    assert all(clock.job(name).status is JobStatus.RUNNING for name in "abcde")


def test_a_throttled_job_is_queued_and_reported_with_when_it_may_start():
    clock = Clock(RATED)
    clock.submit("a")
    clock.submit("b")
    clock.now = 4.0
    commands = clock.submit("c")
    (queued,) = of_type(commands, JobQueued)
    assert queued.waiting_for == {
        "kind": "rate", "limit": "rate", "running": 2, "of": 2, "until": 10.0
    }  # fmt: skip
    (throttled,) = of_type(commands, JobThrottled)
    assert (throttled.job_id, throttled.at, throttled.until) == (clock.id("c"), 4.0, 10.0)


def test_the_wait_ends_with_how_long_it_took():
    clock = Clock(RATED.replace("limit: 2", "limit: 1"))
    clock.submit("a")
    clock.now = 3.0
    clock.submit("b")
    key = f"job-rate:{clock.id('b')}"
    assert clock.timers[key] == 10.0
    del clock.timers[key]
    clock.now = 10.0
    ended = of_type(clock.do(TimerFired(key, 10.0)), ThrottleEnded)
    assert [(e.job_id, e.step, e.waited_s) for e in ended] == [(clock.id("b"), "", 7.0)]


def test_no_window_of_per_seconds_ever_holds_more_than_limit_starts():
    clock = Clock(RATED)
    for i in range(12):
        clock.now = i * 1.5
        clock.submit(f"j{i:02}")
    clock.at(200.0)
    times = [at for at, _ in clock.started]
    assert len(times) == 12
    for start in times:
        assert sum(start <= t < start + 10.0 for t in times) <= 2


def test_keys_read_the_metadata_and_have_windows_of_their_own():
    clock = Clock(KEYED)
    clock.submit("a1", meta={"tenant": "a"})
    clock.submit("b1", meta={"tenant": "b"})
    clock.submit("a2", meta={"tenant": "a"})
    clock.submit("none")
    assert _names(clock) == ["a1", "b1", "none"]
    assert waiting_for(clock.state, clock.job("a2")) == WaitingFor(
        "rate", "rate", '"a"', 1, 1, 10.0
    )
    assert set(clock.state.rates) == {'job:w:"a"', 'job:w:"b"', "job:w:null"}


def test_higher_priority_goes_first_and_fairness_takes_turns_across_keys():
    clock = Clock(RATED.replace("limit: 2", "limit: 1"))
    clock.submit("first")
    clock.submit("low")
    clock.submit("high", priority=7)
    clock.at(25.0)
    assert _names(clock) == ["first", "high", "low"]

    clock = Clock(FAIR)
    clock.submit("a0", {"tenant": "a"})
    for i in range(1, 4):
        clock.submit(f"a{i}", {"tenant": "a"})
    clock.submit("b1", {"tenant": "b"})
    clock.at(25.0)
    assert _names(clock) == ["a0", "b1", "a1"]


def test_a_cancelled_queued_job_leaves_the_line_and_the_next_takes_its_turn():
    clock = Clock(RATED.replace("limit: 2", "limit: 1"))
    clock.submit("a")
    clock.submit("b")
    clock.submit("c")
    assert f"job-rate:{clock.id('b')}" in clock.timers
    clock.do(CancelRequested(clock.id("b"), clock.now))
    assert clock.job("b").status is JobStatus.CANCELLED
    assert f"job-rate:{clock.id('b')}" not in clock.timers
    assert clock.timers[f"job-rate:{clock.id('c')}"] == 10.0
    clock.at(10.0)
    assert _names(clock) == ["a", "c"]
    assert not clock.state.rates["job:w:null"].waiting


def test_a_job_cancelled_before_its_given_turn_gives_the_start_back():
    clock = Clock(RATED.replace("limit: 2", "limit: 1"))
    clock.do(JobSubmitted(clock.id("a"), "w", {}, 0.0))  # its turn is given, not yet taken
    assert clock.state.rates["job:w:null"].counts(clock.id("a"))
    clock.do(CancelRequested(clock.id("a"), 0.0))
    assert not clock.state.rates["job:w:null"].counts(clock.id("a"))
    clock.submit("b")
    assert _names(clock) == ["b"]


def test_with_concurrency_a_job_takes_its_slot_then_waits_for_its_turn_holding_it():
    clock = Clock(LIMITED)
    for name in "abcd":
        clock.submit(name)
    assert _names(clock) == ["a"]
    b = clock.job("b")
    assert waiting_for(clock.state, b).kind == "concurrency"
    done = set()
    held = False
    for tick in range(1, 40):
        clock.at(float(tick))
        for _, name in clock.started:
            if name not in done:
                done.add(name)
                clock.do(StepReplied(clock.id(name), "call", b"{}", clock.now))
        clock.at(clock.now)
        if clock.job("c").status is JobStatus.QUEUED and clock.job("c").throttled_at:
            # c holds the slot (b ended) and waits for its rate turn: nobody else may start
            assert waiting_for(clock.state, clock.job("c")).kind == "rate"
            assert clock.state.scopes["workflow:w:null"].holders == {clock.id("c")}
            held = True
    assert held
    times = [at for at, _ in clock.started]
    assert _names(clock) == ["a", "b", "c", "d"]
    for start in times:
        assert sum(start <= t < start + 10.0 for t in times) <= 2


def test_a_delayed_job_coming_due_waits_for_its_turn():
    clock = Clock(RATED.replace("limit: 2", "limit: 1"))
    clock.submit("now")
    clock.submit("later", not_before=5.0)
    assert clock.job("later").status is JobStatus.SCHEDULED
    clock.at(5.0)
    assert clock.job("later").status is JobStatus.QUEUED
    assert clock.job("later").throttled_until == 10.0
    clock.at(10.0)
    assert clock.started == [(0.0, "now"), (10.0, "later")]


def test_child_jobs_do_not_count():
    clock = Clock(FANNED)
    clock.submit("a", {"items": [1, 2, 3]})
    children = [j for j in clock.state.jobs.values() if j.parent is not None]
    assert len(children) == 3
    assert all(child.status is JobStatus.RUNNING for child in children)
    assert len(clock.state.rates["job:w:null"].starts) == 1


def test_a_retried_job_neither_waits_nor_counts():
    clock = Clock(RATED.replace("limit: 2", "limit: 1"))
    clock.submit("a")
    clock.do(StepReplied(clock.id("a"), "call", b"{}", 1.0, error="boom"))
    assert clock.job("a").status is JobStatus.FAILED
    clock.submit("b")  # waits: a's start is in the window
    clock.now = 2.0
    commands = clock.do(RetryRequested(clock.id("a"), 2.0))
    assert of_type(commands, JobStarted)
    assert clock.job("a").status is JobStatus.RUNNING
    assert [start[1] for start in clock.state.rates["job:w:null"].starts] == [clock.id("a")]
    clock.at(10.0)
    assert clock.started == [(0.0, "a"), (2.0, "a"), (10.0, "b")]


def test_a_replay_of_the_journal_rebuilds_the_same_windows_and_jobs():
    clock = Clock(FAIR)
    for i in range(6):
        clock.now = float(i)
        clock.submit(f"j{i}", {"tenant": "ab"[i % 2]}, priority=i % 3)
    clock.at(15.0)
    clock.do(CancelRequested(clock.id("j5"), clock.now))
    clock.at(35.0)
    state = replay(clock.fresh(), clock.events)
    assert state.rates == clock.state.rates
    assert state.jobs == clock.state.jobs
    assert state.timers == clock.state.timers


def test_the_history_of_a_restart_holds_the_window_and_the_replay_starts_jobs_as_journaled():
    clock = Clock(KEYED.replace("limit: 1", "limit: 2"))
    clock.submit("a", meta={"tenant": "x"})
    clock.now = 1.0
    clock.submit("b", meta={"tenant": "x"})
    clock.now = 2.0
    clock.submit("c", meta={"tenant": "x"})  # waits until 10
    history = RateHistory(
        (),
        5.0,
        tuple(
            JobRateStart("w", clock.id(name), {}, {"tenant": "x"}, at)
            for name, at in (("a", 0.0), ("b", 1.0))
        ),
    )
    restarted = Clock(KEYED.replace("limit: 1", "limit: 2"))
    restarted.names = clock.names
    restarted.do(history)
    restarted.do(history)  # fed twice: counted once
    window = restarted.state.rates['job:w:"x"']
    assert [at for at, _ in window.starts] == [0.0, 1.0]
    # The running jobs' journal replayed over it: each started when the live run started it.
    replay(restarted.state, clock.events)
    for name in "abc":
        assert restarted.job(name).status is clock.job(name).status
    assert restarted.state.rates == clock.state.rates
    stale = Clock(RATED)
    stale.do(RateHistory((), 11.0, history.jobs))  # out of the window: nothing to count
    assert not stale.state.rates


def test_a_release_timer_that_fires_early_waits_for_its_time_again():
    clock = Clock(RATED.replace("limit: 2", "limit: 1"))
    clock.submit("a")
    clock.submit("b")
    key = f"job-rate:{clock.id('b')}"
    del clock.timers[key]
    clock.now = 9.999
    clock.do(TimerFired(key, clock.now))  # a moment before the window has room
    assert clock.job("b").status is JobStatus.QUEUED
    assert clock.timers[key] == 10.0
    clock.at(10.0)
    assert clock.started == [(0.0, "a"), (10.0, "b")]


def test_a_quota_of_0_holds_every_start_until_one_is_granted():
    clock = Clock(RATED, partitions=4)
    job_id = next(
        str(uuid.uuid5(uuid.NAMESPACE_URL, f"q{i}"))
        for i in range(100)
        if hashed_partition(str(uuid.uuid5(uuid.NAMESPACE_URL, f"q{i}")), 4) == 1
    )
    clock.names[job_id] = "q"
    commands = clock.do(JobSubmitted(job_id, "w", {}, 0.0))
    (throttled,) = of_type(commands, JobThrottled)
    assert throttled.until is None
    assert not clock.timers  # no turn to arm while the quota is 0
    assert waiting_for(clock.state, clock.state.jobs[job_id]) == WaitingFor(
        "rate", "rate", None, 0, 0, None
    )
    clock.do(QuotasSet((Quota("rate/job:w:null", 1, 1),), 1.0))
    clock.at(1.0)
    assert clock.started == [(1.0, "q")]
