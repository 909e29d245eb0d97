"""The waiting line of a limit: rank order in one group, weighted round-robin across groups."""

from __future__ import annotations

from collections import Counter

from workflow_manager.engine.fairness import MAX_IDLE_GROUPS, FairShare, Rank, WaitingLine


def _rank(holder: str, at: float, priority: int = 0) -> Rank:
    return (-priority, at, holder)


def _drain(line: WaitingLine, n: int) -> list[str]:
    """Release the next `n` waiters, in turn; their holders."""
    released = []
    for _ in range(n):
        rank = line.next()
        assert rank is not None
        line.release(rank)
        released.append(rank[2])
    return released


def test_without_fairness_the_line_is_priority_then_age() -> None:
    line = WaitingLine()
    line.wait(_rank("old", 1.0))
    line.wait(_rank("new", 2.0))
    line.wait(_rank("urgent", 3.0, priority=5))
    assert len(line) == 3
    assert _drain(line, 3) == ["urgent", "old", "new"]
    assert not line and line.next() is None


def test_leave_takes_a_waiter_out_without_its_turn() -> None:
    line = WaitingLine()
    for i in range(3):
        line.wait(_rank(f"j{i}", float(i)))
    assert line.leave(_rank("j0", 0.0)) is True
    assert line.leave(_rank("j0", 0.0)) is False  # not waiting any more
    assert line.leave(_rank("j1", 9.0)) is False  # the holder waits under another rank
    assert _drain(line, 2) == ["j1", "j2"]


def test_a_scan_in_turn_passes_over_some_and_releases_others() -> None:
    line = WaitingLine()
    for i in range(6):
        line.wait(_rank(f"a{i}", float(i)), FairShare("a"))
    line.wait(_rank("b0", 2.5), FairShare("b"))
    seen = []
    for rank in line.in_turn():
        seen.append(rank[2])
        if rank[2] in ("a1", "b0", "a4"):
            line.release(rank)  # these go; the others cannot yet, and stay
    # Passing over a0 uses no turn of a's: a1 goes first, then b's turn, then a's again.
    assert seen == ["a0", "a1", "b0", "a2", "a3", "a4", "a5"]
    assert sorted(rank[2] for rank in line) == ["a0", "a2", "a3", "a5"]


def test_a_scan_past_a_hot_keys_long_line_reads_it_once() -> None:
    line = WaitingLine()
    for i in range(20_000):
        line.wait(_rank(f"hot{i}", float(i)), FairShare("hot"))
    line.wait(_rank("cold", 1e9), FairShare("cold"))
    scanned = 0
    for rank in line.in_turn():
        scanned += 1
        if rank[2] == "cold":
            line.release(rank)
    assert scanned == 20_001 and len(line) == 20_000


def test_a_key_that_starts_waiting_later_goes_next_not_after_the_others() -> None:
    line = WaitingLine()
    a = FairShare("tenant-a")
    for i in range(100_000):
        line.wait(_rank(f"a{i}", float(i)), a)
    _drain(line, 10)
    line.wait(_rank("b0", 1e9), FairShare("tenant-b"))  # newer than every one of a's
    assert _drain(line, 2) in (["b0", "a10"], ["a10", "b0"])
    assert len(line) == 100_000 - 11


def test_keys_take_turns_by_their_weights() -> None:
    line = WaitingLine()
    for i in range(100):
        line.wait(_rank(f"a{i}", float(i)), FairShare("a", 2.0))
        line.wait(_rank(f"b{i}", float(i)), FairShare("b", 1.0))
        line.wait(_rank(f"c{i}", float(i)), FairShare("c", 1.0))
    counts = Counter(holder[0] for holder in _drain(line, 40))
    assert counts == {"a": 20, "b": 10, "c": 10}


def test_a_key_back_from_idle_gets_no_burst_for_the_time_away() -> None:
    line = WaitingLine()
    for i in range(50):
        line.wait(_rank(f"a{i}", float(i)), FairShare("a"))
    line.wait(_rank("b0", 0.5), FairShare("b"))
    _drain(line, 20)  # b's one waiter went early; a had the rest
    for i in range(1, 11):
        line.wait(_rank(f"b{i}", 100.0 + i), FairShare("b"))
    counts = Counter(holder[0] for holder in _drain(line, 10))
    assert counts == {"a": 5, "b": 5}


def test_a_key_with_one_waiter_at_a_time_gets_every_other_turn_not_all_of_them() -> None:
    line = WaitingLine()
    for i in range(100):
        line.wait(_rank(f"a{i}", float(i)), FairShare("a"))
    released = []
    for i in range(20):
        line.wait(_rank(f"b{i}", 1000.0 + i), FairShare("b"))  # b joins again each turn
        released += _drain(line, 1)
        if released[-1].startswith("a"):
            line.leave(_rank(f"b{i}", 1000.0 + i))
    counts = Counter(holder[0] for holder in released)
    assert counts == {"a": 10, "b": 10}


def test_memory_stays_with_the_keys_that_wait() -> None:
    line = WaitingLine()
    for i in range(10_000):
        line.wait(_rank(f"k{i}", float(i)), FairShare(f"key-{i}"))
    _drain(line, 10_000)
    line.wait(_rank("last", 1e6), FairShare("key-last"))
    _drain(line, 1)
    assert len(line._groups) <= MAX_IDLE_GROUPS + 1  # noqa: SLF001 - the point of the test


def test_keep_only_drops_the_others_without_their_turns() -> None:
    line = WaitingLine()
    for i in range(4):
        line.wait(_rank(f"j{i}", float(i)), FairShare("odd" if i % 2 else "even"))
    line.keep_only(lambda rank: rank[2] in {"j1", "j2"})
    assert sorted(line) == [_rank("j1", 1.0), _rank("j2", 2.0)]


def test_keys_that_come_and_go_beside_a_long_line_are_not_all_remembered() -> None:
    line = WaitingLine()
    for i in range(20_000):
        line.wait(_rank(f"a{i}", float(i)), FairShare("a"))
    for i in range(10_000):
        line.wait(_rank(f"k{i}", 1e6 + i), FairShare(f"key-{i}"))
        _drain(line, 2)  # the key's one waiter and one of a's, in some order
    assert len(line) == 20_000 - 10_000
    assert len(line._groups) <= 4  # noqa: SLF001 - what the line keeps is the point here


def test_turns_taken_without_waiting_count_against_the_key() -> None:
    line = WaitingLine()
    for _ in range(2):
        line.took_turn(FairShare("a"))  # a's work got free slots at once
    for i in range(10):
        line.wait(_rank(f"a{i}", float(i)), FairShare("a"))
    line.wait(_rank("b0", 100.0), FairShare("b"))
    assert _drain(line, 1) == ["b0"]
